import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { terminalSafe } from "../../src/contract/terminal-safe.ts";
import { type ChallengeServer, startChallengeServer } from "../support/challenge-server.ts";
import type { PinboardProcess } from "../support/pinboard-process.ts";
import { usePinboardProcess } from "../support/pinboard-process-fixture.ts";
import type { TestRedis } from "../support/redis.ts";
import { registerBody } from "../support/registration.ts";
import { putRows } from "../support/rows.ts";
import { spawnCli } from "./cli-process.ts";

/**
 * A worker's strings reach the operator's terminal as text, never as control codes: a worker
 * registers with the real Node entry (hostname-aware, logging at info) under a clientId, hostname,
 * env and tag full of terminal attacks (erase the line, set the title, write the clipboard through
 * OSC 52, the C1 CSI, bidi overrides, DEL, CR), and `npx pinboard` (a process of its own) prints
 * workers, overview, audit, and a hint naming a clientId, with none of those code points raw and
 * each shown as its `\uXXXX` escape; the server's JSON log line of the register alike.
 */

const ATTACKS = "\u001b[2K\u001b]0;owned\u0007\u001b]52;c;cGF5bG9hZA==\u0007\u009b2K\u202eevil\u2066\u007f";
/** Hostnames and envs are labels (no whitespace, so no CR); everything else goes in. */
const CLIENT_ID = `w\r\n${ATTACKS}\u2028x\u000b`;
const HOSTNAME = `h${ATTACKS}`;
const ENV = `e${ATTACKS}`;
/** As register stores them: labels are lowercased. */
const [HOST_STORED, ENV_STORED] = [HOSTNAME.toLowerCase(), ENV.toLowerCase()];
const TAG = `t\r\n${ATTACKS}\u200f`;

/** Any of the code points a terminal would act on, LF (the output's own layout) aside. */
const RAW_CONTROL =
  // biome-ignore lint/suspicious/noControlCharactersInRegex: the test looks for raw control characters
  /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/u;

let t: TestRedis;
let pb: PinboardProcess;
let worker: ChallengeServer;
let token: string;
let sessionId: string;

usePinboardProcess(
  { PINBOARD_HOSTNAME_AWARE: "true", PINBOARD_LOG_LEVEL: "info", PINBOARD_LEASE_TTL_MS: "600000" },
  (f) => ({ t, pb } = f),
);
beforeAll(async () => {
  worker = await startChallengeServer();
  token = await pb.operatorCredential();
  const res = await fetch(`${pb.url}/registry/register`, {
    method: "POST",
    headers: { authorization: `Bearer ${await pb.workerCredential()}`, "content-type": "application/json" },
    body: JSON.stringify(
      registerBody(worker, { clientId: CLIENT_ID, hostname: HOSTNAME, env: ENV, namespaces: ["/threads"] }),
    ),
  });
  expect(res.status).toBe(200);
  ({ sessionId } = (await res.json()) as { sessionId: string });
  // A placement of the worker's (the data plane's row), then its owner tags it through the route.
  await putRows(t, "/threads", [{ id: "doc-1", row: { sessionId, epoch: "7", hostname: HOST_STORED } }], ENV_STORED);
  const tagged = await fetch(`${pb.url}/registry/tag`, {
    method: "POST",
    headers: { authorization: `Bearer ${await pb.workerCredential()}`, "content-type": "application/json" },
    body: JSON.stringify({ sessionId, namespace: "/threads", id: "doc-1", epoch: "7", tag: TAG }),
  });
  expect(await tagged.json()).toEqual({ tagged: true });
}, 60_000);
afterAll(async () => {
  await worker?.close();
});

async function cli(args: string[]) {
  return spawnCli(args, { env: { PINBOARD_URL: pb.url, PINBOARD_OPERATOR_TOKEN: token } });
}

function expectNoRawControl(text: string): void {
  const found = RAW_CONTROL.exec(text);
  expect(found && `U+${found[0].codePointAt(0)!.toString(16)} at ${found.index}`).toBeNull();
}

describe.concurrent("worker strings on the operator's terminal", { timeout: 60_000 }, () => {
  it("pinboard workers shows the clientId, hostname and env escaped", async () => {
    const run = await cli(["workers"]);
    expect(run).toMatchObject({ code: 0, stderr: "" });
    expectNoRawControl(run.stdout);
    const row = run.stdout.split("\n")[1]!;
    expect(row).toContain(terminalSafe(CLIENT_ID));
    expect(row).toContain(terminalSafe(HOST_STORED));
    expect(row).toContain(`/threads@${terminalSafe(ENV_STORED)}`);
  });

  it("pinboard overview shows the bindings, groups and the tag escaped", async () => {
    const run = await cli(["overview"]);
    expect(run).toMatchObject({ code: 0, stderr: "" });
    expectNoRawControl(run.stdout);
    const [, bindings, , placements] = run.stdout.trim().split("\n\n");
    expect(bindings).toContain(`${terminalSafe(HOST_STORED)}/threads`);
    expect(placements).toContain(terminalSafe(TAG));
    expect(placements).toContain(terminalSafe(CLIENT_ID));
  });

  it("pinboard audit shows the register entry's target escaped", async () => {
    const run = await cli(["audit", "--limit", "20"]);
    expect(run).toMatchObject({ code: 0, stderr: "" });
    expectNoRawControl(run.stdout);
    const row = run.stdout.split("\n").find((l) => l.includes("worker.registered"));
    expect(row).toContain(`client ${terminalSafe(CLIENT_ID)} (/threads)`);
    expect(row).toContain(`on ${terminalSafe(HOST_STORED)}`);
  });

  it("--json stays JSON with the same strings, none of their controls raw", async () => {
    const run = await cli(["workers", "--json"]);
    expect(run).toMatchObject({ code: 0, stderr: "" });
    expectNoRawControl(run.stdout);
    const answer = JSON.parse(run.stdout) as { workers: Array<{ clientId: string; hostname: string }> };
    expect(answer.workers.map((w) => [w.clientId, w.hostname])).toEqual([[CLIENT_ID, HOST_STORED]]);
  });

  it("a refusal's hint naming a clientId shows it escaped on stderr", async () => {
    const run = await cli(["drain", `${CLIENT_ID}-unknown`]);
    expect(run.code).toBe(1);
    expectNoRawControl(run.stderr);
    expect(run.stderr).toContain("pinboard: forbidden (HTTP 403)\n");
    expect(run.stderr).toContain(terminalSafe(JSON.stringify(`${CLIENT_ID}-unknown`)));
  });

  it("the server's log line of the register carries the clientId escaped, as JSON that reads back", () => {
    expectNoRawControl(pb.output());
    const line = pb
      .output()
      .split("\n")
      .find((l) => l.includes('"worker registered"'));
    expect(JSON.parse(line!)).toMatchObject({
      level: "info",
      msg: "worker registered",
      sessionId,
      clientId: CLIENT_ID,
    });
  });
});
