/**
 * `npm run demo`: an embedded Redis, one Pinboard Node entry and two example workers
 * (examples/worker.ts serving /counter and /chat), then curl commands to try, until Ctrl-C.
 *
 * `npm run demo -- --script` runs the story without a human and exits 0 when it held: a counter
 * incremented through Pinboard survives a SIGKILL of its worker and comes back, with the same
 * count, on the other worker (scripts/demo/story.ts).
 *
 * Every process started here is stopped on exit, on Ctrl-C and on failure.
 */
import { fetchWithRetry } from "./demo/http.ts";
import { instructions } from "./demo/instructions.ts";
import { Cleanup, type DemoStack, type DemoWorker, startStack } from "./demo/stack.ts";
import { runStory } from "./demo/story.ts";

const args = process.argv.slice(2);
if (args.includes("--help") || args.includes("-h")) {
  console.log(
    "usage: npm run demo [-- --script]\n  --script  run the kill-a-worker story non-interactively and exit (0 when it held)",
  );
  process.exit(0);
}
const scripted = args.includes("--script");
const LEASE_MS = Number(process.env.PINBOARD_LEASE_TTL_MS ?? 3000);
/** The scripted run (start-up included) gives up after this long; test/scripts/demo.test.ts allows more. */
const SCRIPT_TIMEOUT_MS = 100_000;

const say = (line: string) => console.log(`[demo] ${line}`);
const cleanup = new Cleanup();

class Interrupted extends Error {
  constructor(readonly signal: string) {
    super(`interrupted by ${signal}`);
  }
}

let stopRequested!: (reason: string) => void;
const stopped = new Promise<string>((resolve) => (stopRequested = resolve));
let signals = 0;
const onSignal = (signal: NodeJS.Signals) => {
  signals++;
  cleanup.signalled = true;
  if (signals === 1) stopRequested(signal);
  // Ctrl-C may arrive twice (from the terminal and relayed by npm/tsx); a third one is impatience.
  if (signals >= 3) {
    console.error("[demo] stopping at once");
    process.exit(130);
  }
};
process.on("SIGINT", onSignal);
process.on("SIGTERM", onSignal);

/** Rejects when a signal asks to stop, and in script mode once SCRIPT_TIMEOUT_MS passed. */
const interrupted = new Promise<never>((_, reject) => {
  void stopped.then((signal) => reject(new Interrupted(signal)));
  if (scripted) {
    const timer = setTimeout(
      () => reject(new Error(`the scripted demo did not finish within ${SCRIPT_TIMEOUT_MS / 1000} s`)),
      SCRIPT_TIMEOUT_MS,
    );
    timer.unref();
  }
});
interrupted.catch(() => {});

async function main(): Promise<number> {
  say(scripted ? "starting (scripted story)" : "starting");
  const stack = await Promise.race([
    startStack({
      workers: ["worker-a", "worker-b"],
      leaseMs: LEASE_MS,
      cleanup,
      log: say,
      workerLine: (worker, line) => console.log(`[${worker}] ${line}`),
      port: Number(process.env.PORT ?? 0),
    }),
    interrupted,
  ]);

  if (scripted) {
    await Promise.race([runStory(stack, say), interrupted]);
    return 0;
  }

  const { counterOwner, roomOwner } = await Promise.race([warmUp(stack), interrupted]);
  console.log(instructions(stack, counterOwner, roomOwner));
  for (const worker of stack.workers) {
    void worker.exited.then((how) => {
      if (cleanup.signalled) return;
      const others = stack.workers.filter((w) => w.alive()).map((w) => w.name);
      say(
        `${worker.name} (pid ${worker.pid}) exited (${how}); its ids move to ${others.join(", ") || "no one (no worker left)"} ` +
          `once its lease (${LEASE_MS / 1000} s) runs out`,
      );
    });
  }
  await stopped;
  say("stopping");
  return 0;
}

/**
 * Places the two ids the instructions use, waiting out the cold start of a fresh Redis (503
 * with Retry-After), so the printed commands answer at once and name the right owner.
 */
async function warmUp(stack: DemoStack): Promise<{ counterOwner: DemoWorker; roomOwner: DemoWorker }> {
  say("placing /counter/demo and /chat/lobby (a fresh Redis refuses new placements for one lease)");
  const owners: DemoWorker[] = [];
  for (const [ns, id] of [
    ["/counter", "demo"],
    ["/chat", "lobby"],
  ] as const) {
    const res = await fetchWithRetry(`${stack.pinboardUrl}${ns}/${id}`, {}, { timeoutMs: 30_000 });
    await res.arrayBuffer();
    if (!res.ok) throw new Error(`GET ${ns}/${id}: HTTP ${res.status}`);
    const owner = await stack.operator.owner(ns, id);
    const worker = stack.workers.find((w) => w.name === owner?.clientId);
    if (!worker) throw new Error(`no owner of ${ns}/${id} in the overview`);
    owners.push(worker);
  }
  return { counterOwner: owners[0]!, roomOwner: owners[1]! };
}

let code: number;
try {
  code = await main();
} catch (err) {
  if (err instanceof Interrupted) {
    say(`${err.signal}: stopping`);
    code = scripted ? 1 : 0;
  } else {
    console.error(`[demo] failed: ${err instanceof Error ? err.message : String(err)}`);
    code = 1;
  }
}
const force = setTimeout(() => {
  console.error("[demo] cleanup took too long, exiting");
  process.exit(code || 1);
}, 20_000);
force.unref();
await cleanup.run(say);
say(code === 0 ? "stopped" : `stopped (exit ${code})`);
process.exit(code);
