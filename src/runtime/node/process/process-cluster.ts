import cluster, { type Address, type Worker } from "node:cluster";
import { availableParallelism } from "node:os";
import type { Config } from "../../../config/config.ts";
import { createLogger, type Logger } from "../../../log/logger.ts";
import {
  type DevPassport,
  describeMinting,
  devKeyExposureWarning,
  durableRedisForWorkers,
  mintDevPassport,
} from "../dev-store/dev-credentials.ts";
import { printDevBanner } from "../dev-store/dev-env-file.ts";
import { type DevStore, startDevStore } from "../dev-store/dev-store.ts";
import { answerMetricsScrapes } from "../metrics/cluster-metrics.ts";
import { SHUTDOWN_GRACE_MS } from "./serving-process.ts";

/** A process that dies is forked again after this, doubling with each that dies young in a row. */
const RESTART_MIN_MS = 200;
const RESTART_MAX_MS = 10_000;
/** A process that ran this long died of something else than its start: back to RESTART_MIN_MS. */
const STABLE_AFTER_MS = 30_000;

/** PINBOARD_PROCESSES as a count: "auto" is one process per CPU. */
export function processCount(setting: number | "auto"): number {
  return setting === "auto" ? availableParallelism() : setting;
}

/**
 * The primary of PINBOARD_PROCESSES > 1: serves nothing itself. It starts what the processes
 * must share (the embedded redis-server when no Redis is configured, the development key when no
 * passport key is), forks `processes` node:cluster workers that each run startNode on the shared
 * port (serving-process.ts), prints the start banner once, restarts a process that dies (with a
 * back-off), answers /metrics scrapes with the aggregate of all of them, and on SIGTERM or SIGINT
 * stops them all gracefully, then the embedded Redis, and exits 0.
 *
 * Resolves once the processes are forked; throws (nothing forked, nothing left running) when the
 * shared Redis or key cannot be set up.
 */
export async function runProcessCluster(options: { config: Config; processes: number; devDir: string }): Promise<void> {
  const { config, processes } = options;
  const log = createLogger(config.logLevel);
  const shared = await setUpShared(config, options.devDir, log);
  if (config.metrics) answerMetricsScrapes();
  const supervisor = new Supervisor(config, processes, shared, log, options.devDir);
  cluster.on("listening", (_worker, address) => supervisor.listening(address));
  cluster.on("exit", (worker, code, signal) => supervisor.exited(worker, code, signal));
  for (const signal of ["SIGTERM", "SIGINT"] as const) {
    process.once(signal, () => {
      console.error(`pinboard: ${signal}, shutting down`);
      supervisor.shutdown(0);
    });
  }
  for (let i = 0; i < processes; i++) supervisor.fork();
}

/** What the processes share: the environment they are forked with, and what the primary started for it. */
interface Shared {
  /** PINBOARD_PASSPORT_SECRET (the development key) and REDIS_URL (the embedded Redis), when set here. */
  env: Record<string, string>;
  dev: DevPassport | undefined;
  embedded: DevStore | undefined;
}

/** The development key when no passport key is configured, the embedded Redis when no Redis is. */
async function setUpShared(config: Config, devDir: string, log: Logger): Promise<Shared> {
  const env: Record<string, string> = {};
  let dev: DevPassport | undefined;
  if (!config.passport.secret && !config.passport.jwks) {
    const minted = await mintDevPassport(devDir);
    if (minted.keyFileError !== undefined)
      log.warn(`cannot save the development key (${minted.keyFileError}): it lasts for this run only`);
    dev = minted;
    env.PINBOARD_PASSPORT_SECRET = minted.secret;
    const exposure = devKeyExposureWarning(config.host);
    if (exposure !== undefined) log.warn(exposure);
  }
  const { redis } = config;
  const embedded =
    redis.clusterNodes?.length || redis.url || (redis.restUrl && redis.restToken)
      ? undefined
      : await startDevStore(config, devDir, log);
  if (embedded) env.REDIS_URL = embedded.url;
  return { env, dev, embedded };
}

/** The primary's processes: forks, restarts with a back-off, the banner once, the graceful stop. */
class Supervisor {
  private readonly alive = new Set<Worker>();
  private readonly bornAt = new Map<Worker, number>();
  private readonly restarts = new Set<ReturnType<typeof setTimeout>>();
  private earlyDeaths = 0;
  private isListening = false;
  private shuttingDown = false;
  private allExited: () => void = () => {};

  constructor(
    private readonly config: Config,
    private readonly processes: number,
    private readonly shared: Shared,
    private readonly log: Logger,
    private readonly devDir: string,
  ) {}

  fork(): void {
    const worker = cluster.fork(this.shared.env);
    this.alive.add(worker);
    this.bornAt.set(worker, Date.now());
  }

  /** The first process that listens: the banner. */
  listening(address: Address): void {
    if (this.isListening) return;
    this.isListening = true;
    const { config, shared } = this;
    // Each process listens on the data port before the admin port: the first address is the data port's.
    const adminUrl = config.admin.port ? urlOf({ ...address, port: config.admin.port }, config) : undefined;
    void printBanner(
      this.log,
      config,
      this.processes,
      { url: urlOf(address, config), adminUrl, devDir: this.devDir },
      shared.embedded,
      shared.dev,
    ).catch((err: unknown) => this.log.error("cannot write the dev env file", { error: String(err) }));
  }

  exited(worker: Worker, code: number, signal: string): void {
    this.alive.delete(worker);
    const lived = Date.now() - (this.bornAt.get(worker) ?? 0);
    this.bornAt.delete(worker);
    if (this.shuttingDown) {
      if (this.alive.size === 0) this.allExited();
      return;
    }
    const how = { pid: worker.process.pid, code, signal };
    if (!this.isListening) {
      // Nothing ever served: the next start would fail the same way (port taken, …).
      this.log.error("a pinboard process failed to start; stopping", how);
      this.shutdown(1);
      return;
    }
    this.earlyDeaths = lived >= STABLE_AFTER_MS ? 0 : this.earlyDeaths + 1;
    const restartDelay = Math.min(RESTART_MIN_MS * 2 ** Math.max(0, this.earlyDeaths - 1), RESTART_MAX_MS);
    this.log.warn("a pinboard process exited; starting another", { ...how, restartInMs: restartDelay });
    const timer = setTimeout(() => {
      this.restarts.delete(timer);
      this.fork();
    }, restartDelay);
    this.restarts.add(timer);
  }

  /** Stops every process (SIGKILL after the grace), then the embedded Redis, and exits with `code`. */
  shutdown(code: number): void {
    if (this.shuttingDown) return;
    this.shuttingDown = true;
    for (const timer of this.restarts) clearTimeout(timer);
    setTimeout(() => {
      for (const worker of this.alive) worker.process.kill("SIGKILL");
      process.exit(1);
    }, SHUTDOWN_GRACE_MS).unref();
    new Promise<void>((resolve) => {
      this.allExited = resolve;
      if (this.alive.size === 0) resolve();
    })
      .then(() => this.shared.embedded?.stop())
      .then(
        () => process.exit(code),
        () => process.exit(1),
      );
    for (const worker of this.alive) worker.process.kill("SIGTERM");
  }
}

function urlOf(address: Address, config: Config): string {
  const ip = address.address ?? config.host;
  const host = address.addressType === 6 ? `[${ip}]` : ip;
  return `http://${host}:${address.port}${config.basePath}`;
}

/** What a lone process prints once it listens (start-node.ts, src/node.ts), printed once for all processes. */
async function printBanner(
  log: Logger,
  config: Config,
  processes: number,
  where: { url: string; adminUrl: string | undefined; devDir: string },
  embedded: DevStore | undefined,
  dev: DevPassport | undefined,
): Promise<void> {
  const { url, adminUrl } = where;
  log.info("pinboard processes listening", { url, ...(adminUrl ? { adminUrl } : {}), processes });
  if (embedded) console.log(`Redis: ${embedded.describe}; stopped with Pinboard`);
  console.log(`Console: ${adminUrl ?? url}/console`);
  if (dev) {
    await printDevBanner(dev, { ...where, durableRedisUrl: durableRedisForWorkers(config, embedded) });
    return;
  }
  const minting = describeMinting(config.passport);
  if (minting !== undefined) console.log(minting);
}
