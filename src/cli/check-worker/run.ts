import { attestationChecks, challengeChecks, epochChecks } from "./checks-guard.ts";
import { drainingChecks, windDownChecks, withheldLeaseChecks } from "./checks-lease.ts";
import { probeChecks, reregisterChecks } from "./checks-registration.ts";
import { alarmChecks, statsChecks, wakeChecks } from "./checks-routes.ts";
import { CheckContext } from "./context.ts";
import { buildReport, type CheckResult, type Report, shown } from "./report.ts";
import { StubRegistry } from "./stub-registry.ts";
import { WorkerClient } from "./worker-client.ts";
import { WorkerProcess } from "./worker-process.ts";

export interface CheckOptions {
  /** The worker command to start, or null to wait for one started by hand (`listen`). */
  command: string[] | null;
  listen: { host: string; port: number };
  /** expiresInMs in the registry's answers: the lease the worker keeps. */
  leaseMs: number;
  /** How long to wait for the worker's register. */
  waitMs: number;
  /** The namespace to check (default: the first one registered). */
  namespace?: string;
  /** Told where the registry listens and what to set, before waiting (--listen). */
  announce(lines: string[]): void;
}

/** The token the spawned worker gets: the checker's registry takes any credential. */
export const CHECK_TOKEN = "check-worker";

/** The groups of checks, in the order they run: the lease-changing ones last. */
const GROUPS: ReadonlyArray<(ctx: CheckContext) => Promise<void>> = [
  probeChecks,
  challengeChecks,
  reregisterChecks,
  attestationChecks,
  epochChecks,
  statsChecks,
  wakeChecks,
  alarmChecks,
  windDownChecks,
  drainingChecks,
  withheldLeaseChecks,
];

type Outcome = { report: Report; workerOutput: string[] };

/** Runs the whole check against one worker and reports; the worker (if started here) is stopped. */
export async function checkWorker(options: CheckOptions): Promise<Outcome> {
  const registry = new StubRegistry(options.leaseMs);
  const url = await registry.listen(options.listen.host, options.listen.port);
  const env = { PINBOARD_URL: url, PINBOARD_WORKER_TOKEN: CHECK_TOKEN };
  const worker =
    options.command === null
      ? null
      : new WorkerProcess(options.command, env, () => {
          registry.workerGone = true;
          registry.notify();
        });
  if (worker === null)
    options.announce([
      `check-worker: Pinboard for the worker at ${url}: start it with`,
      `  PINBOARD_URL=${url} PINBOARD_WORKER_TOKEN=${CHECK_TOKEN}`,
    ]);
  try {
    const registered = await registry.waitFor(() => registry.worker !== null, options.waitMs);
    if (!registered) {
      const result = notRegistered(registry, worker, options.waitMs);
      return { report: buildReport({}, [result]), workerOutput: worker?.output() ?? [] };
    }
    return await runChecks(registry, worker, options.namespace);
  } finally {
    await worker?.stop();
    await registry.close();
  }
}

/** The check groups against a registered worker, then what went wrong around them. */
async function runChecks(registry: StubRegistry, worker: WorkerProcess | null, namespace?: string): Promise<Outcome> {
  const identity = registry.worker!;
  const ns = namespace ?? identity.namespaces[0]!;
  const ctx = new CheckContext(registry, new WorkerClient(() => registry.worker ?? identity), ns);
  const running = () => (worker?.exit ?? null) === null;
  if (!identity.namespaces.includes(ns)) {
    const got = shown(JSON.stringify(identity.namespaces));
    ctx.fail("register", `the worker registers ${shown(ns)}`, got, "the namespace given by --namespace");
  } else {
    // A worker that exited is not checked further: every call would only find it gone.
    for (const group of GROUPS) if (running()) await group(ctx);
  }
  for (const fault of registry.faults)
    ctx.fail("register", "the checker's registry answers", shown(fault), "no error of its own");
  const exit = worker?.exit ?? null;
  if (exit !== null)
    ctx.fail(
      "process",
      "the worker runs through the checks",
      exitText(exit),
      "a worker that keeps running until stopped",
    );
  const { clientId, advertiseUrl, namespaces, sessionId } = registry.worker ?? identity;
  return {
    report: buildReport({ clientId, advertiseUrl, namespaces, sessionId }, ctx.results),
    workerOutput: exit !== null ? worker!.output() : [],
  };
}

const exitText = (exit: { code: number | null; signal: string | null }) =>
  `the worker exited (${exit.signal ?? `status ${exit.code}`})`;

function notRegistered(registry: StubRegistry, worker: WorkerProcess | null, waitMs: number): CheckResult {
  const probe = registry.registerProbes.at(-1);
  const refused = registry.refusedBodies.at(-1);
  const got =
    probe !== undefined
      ? `every register's probe failed, the last answered ${probe.got}`
      : refused !== undefined
        ? `a register body the protocol refuses (400 ${shown(refused)})`
        : worker?.exit
          ? `${exitText(worker.exit)} without registering`
          : `no register within ${waitMs} ms`;
  return {
    status: "fail",
    group: "register",
    title: "the worker registers and answers the register's challenge probe",
    got,
    expected: 'POST /registry/register with the protocol\'s body, and the probe answered 200 {"value": challengeValue}',
  };
}
