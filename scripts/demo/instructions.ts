/**
 * What `npm run demo` prints for a human: curl commands against the running stack, a WebSocket
 * client for the chat room, and how to kill the worker that owns the counter.
 */
import { existsSync } from "node:fs";
import { delimiter, join } from "node:path";
import type { DemoStack, DemoWorker } from "./stack.ts";
import { ROOT } from "./stack.ts";

function onPath(binary: string): boolean {
  const dirs = [join(ROOT, "node_modules", ".bin"), ...(process.env.PATH ?? "").split(delimiter)];
  return dirs.some((dir) => dir !== "" && existsSync(join(dir, binary)));
}

export function instructions(stack: DemoStack, counterOwner: DemoWorker, roomOwner: DemoWorker): string {
  const base = stack.pinboardUrl;
  const wsBase = base.replace(/^http/, "ws");
  const other = stack.workers.find((w) => w !== counterOwner);
  const auth = `-H "Authorization: Bearer $PINBOARD_OPERATOR_TOKEN"`;
  // A tiny client on the `ws` package this repository depends on (Node 20 has no global WebSocket).
  const nodeClient =
    `node -e 'const s=new (require("ws"))(process.argv[1]);` +
    `s.on("message",(m)=>console.log(String(m)));s.on("close",()=>process.exit());` +
    `process.stdin.on("data",(d)=>s.send(String(d).trim()))' "${wsBase}/chat/lobby?name=bob"`;

  const lines = [
    "",
    "Pinboard demo is running:",
    `  pinboard   ${base}   (lease ${stack.leaseMs / 1000} s)`,
    ...stack.workers.map((w) => `  ${w.name.padEnd(10)} ${w.url}   pid ${w.pid}`),
    `  redis      redis://127.0.0.1:${stack.redis.port}   (Pinboard's registry; the workers' durable state as user pinned)`,
    "",
    "In another terminal:",
    "",
    `  export PINBOARD_URL=${base}`,
    `  export PINBOARD_OPERATOR_TOKEN=${stack.operatorToken}`,
    "",
    "  # a durable counter (examples/counter.ts)",
    "  curl -s -X POST $PINBOARD_URL/counter/demo/increment",
    "  curl -s $PINBOARD_URL/counter/demo",
    '  curl -s -X POST "$PINBOARD_URL/counter/demo/reset-after?seconds=30"   # an alarm resets it in 30 s',
    "",
    "  # which worker owns which id, and the workers (operator credential)",
    `  curl -s ${auth} "$PINBOARD_URL/registry/overview"`,
    `  curl -s ${auth} $PINBOARD_URL/registry/workers`,
    "  npx pinboard workers                 # the same with the operator CLI, which reads both exports",
    "  npx pinboard overview --ns /counter",
    "",
    "  # the chat room over WebSocket (examples/chat-room.ts): type a line to send it",
    ...(onPath("wscat") ? [`  npx wscat -c "${wsBase}/chat/lobby?name=alice"`] : []),
    `  ${nodeClient}`,
    "    (run the node one-liner from the repository directory, where the ws package is installed)",
    `  curl -s -X POST $PINBOARD_URL/chat/lobby/messages -d '{"name":"carol","text":"hi all"}'`,
    "  curl -s $PINBOARD_URL/chat/lobby   # the stored history",
    "",
    `  # kill worker ${counterOwner.name} (pid ${counterOwner.pid}), which owns /counter/demo${roomOwner === counterOwner ? " and /chat/lobby" : ""}, and read the counter again`,
    `  kill -9 ${counterOwner.pid}`,
    "  curl -s $PINBOARD_URL/counter/demo",
    `    # 502/503 until its lease (${stack.leaseMs / 1000} s) runs out, then the same count, served by ${other?.name ?? "the other worker"}`,
    "    # at a higher epoch; chat clients reconnect and get the room's history back",
    "",
    'A 503 {"error":"registry cold start, retry"} in the first seconds is Pinboard waiting one lease',
    "on a fresh Redis before it places anything new: retry after Retry-After.",
    "Ctrl-C stops everything.",
    "",
  ];
  return lines.join("\n");
}
