import { randomBytes } from "node:crypto";
import { userInfo } from "node:os";
import { buildDeps } from "../app/bootstrap.ts";
import { recordAudit } from "../audit/trail.ts";
import { type Config, ConfigError, parseConfig } from "../config/config.ts";
import { createLogger } from "../log/logger.ts";
import { redisFromConfig } from "../runtime/node/redis/redis-from-config.ts";
import { runSweep, type SweepReport } from "../sweeper/sweep.ts";
import { UsageError } from "./args.ts";
import { renderPairs, renderTable } from "./table.ts";

/** While another sweeper holds the lease, retry this long before giving up. */
export const LEASE_WAIT_MS = 5000;
const LEASE_RETRY_MS = 250;

export interface SweepOutcome {
  report: SweepReport;
  /** Which Redis was swept (password redacted). */
  redis: string;
}

/**
 * One runSweep pass against the Redis the server uses, configured from the same environment
 * (a missing Redis setting or a bad variable is a UsageError: exit status 2). It never spawns
 * the embedded Redis: a private, empty redis-server would sweep nothing. Like every sweeper it
 * must hold the fleet license first, so a configuration that differs from the serving fleet's
 * (shards, mode, epoch) is refused with the fleet's reason. It needs the server's key for worker
 * secrets (PINBOARD_PASSPORT_SECRET or PINBOARD_SECRETS_KEY) to attest its calls; with only
 * PINBOARD_SECRETS_KEY a throwaway passport key satisfies buildDeps (a sweep verifies no
 * credential). Logs go to stderr (warnings and up unless PINBOARD_LOG_LEVEL says otherwise) so
 * stdout carries the report only.
 */
export async function sweepNow(env: Record<string, string | undefined>): Promise<SweepOutcome> {
  let config: Config;
  try {
    config = parseConfig(env);
  } catch (err) {
    if (err instanceof ConfigError) throw new UsageError(err.message, "sweep-now");
    throw err;
  }
  const { redis } = config;
  if (!redis.url && !redis.clusterNodes?.length && !redis.restUrl) {
    throw new UsageError(
      "sweep-now needs the server's Redis: set REDIS_URL, REDIS_CLUSTER_NODES or UPSTASH_REDIS_REST_URL " +
        "(with UPSTASH_REDIS_REST_TOKEN)",
      "sweep-now",
    );
  }
  if (!config.secretsKey && !config.passport.secret) {
    throw new UsageError(
      "sweep-now needs the server's key to open worker secrets (its _wake and _alarm calls are attested): " +
        "set PINBOARD_PASSPORT_SECRET, or PINBOARD_SECRETS_KEY, as the server has it",
      "sweep-now",
    );
  }
  if (!config.passport.secret && !config.passport.jwks) {
    config = { ...config, passport: { ...config.passport, secret: randomBytes(32).toString("hex") } };
  }

  const ports = await redisFromConfig(config);
  try {
    const deps = buildDeps({
      config,
      redis: ports.port,
      ...(ports.durable ? { durableRedis: ports.durable } : {}),
      log: createLogger(env.PINBOARD_LOG_LEVEL ? config.logLevel : "warn", {
        log: console.error,
        error: console.error,
      }),
      runtime: { label: "node", backgroundWork: "runs-on", fetchDecodesBodies: true, startedAt: Date.now() },
    });
    const fleet = await deps.fleet.refresh();
    if (!fleet.serving) {
      const reason = fleet.reason ?? "not serving";
      if (reason.startsWith("redis:"))
        throw new Error(`cannot reach ${ports.describe}: ${reason.slice("redis:".length).trim()}`);
      throw new UsageError(
        `this configuration is not the serving fleet's (${reason}); ` +
          "run sweep-now with the server's PINBOARD_* variables",
        "sweep-now",
      );
    }
    const deadline = Date.now() + LEASE_WAIT_MS;
    for (;;) {
      const report = await runSweep(deps, `sweep-now-${randomBytes(6).toString("hex")}`);
      if (report.ran || Date.now() >= deadline) {
        await recordAudit(deps, {
          kind: "action",
          type: "sweep",
          subject: localSubject(env),
          via: "cli",
          target: {},
          detail: { ...report },
        });
        return { report, redis: ports.describe };
      }
      await new Promise((resolve) => setTimeout(resolve, LEASE_RETRY_MS));
    }
  } finally {
    await ports.port.close().catch(() => {});
    await ports.durable?.close().catch(() => {});
  }
}

/**
 * Who a local sweep is recorded as in the audit trail: it runs against Redis without a
 * credential, so the operating-system user that ran it, marked as such (`local:alice`).
 */
export function localSubject(env: Record<string, string | undefined>): string {
  let user = "";
  try {
    user = userInfo().username;
  } catch {
    // No passwd entry for this uid (some containers): the environment's word is all there is.
  }
  return `local:${user || env.USER || env.USERNAME || "unknown"}`;
}

/** The report for humans: the pass's counts, then wakes and alarms by outcome. */
export function renderSweepReport({ report, redis }: SweepOutcome): string {
  if (!report.ran) return `sweep skipped: another sweeper kept the lease for ${LEASE_WAIT_MS / 1000}s (${redis})`;
  const pairs: Array<[string, string]> = [
    ["redis", redis],
    ["live sessions", String(report.sessions ?? 0)],
    ["pruned mirrors", String(report.prunedMirrors ?? 0)],
    ["resurrected", String(report.resurrected ?? 0)],
    ["orphans listed", String(report.orphans ?? 0)],
    ...(report.subrequests !== undefined ? [["subrequests", String(report.subrequests)] as [string, string]] : []),
    ["duration", `${report.durationMs}ms`],
  ];
  const rows: Array<[string, string, number]> = [];
  for (const [outcome, count] of Object.entries(report.wakes ?? {})) rows.push(["wakes", outcome, count]);
  for (const [outcome, count] of Object.entries(report.alarms ?? {})) rows.push(["alarms", outcome, count]);
  const table = renderTable(
    [
      { header: "STAGE", cell: (r: [string, string, number]) => r[0] },
      { header: "OUTCOME", cell: (r) => r[1] },
      { header: "COUNT", cell: (r) => String(r[2]), align: "right" },
    ],
    rows,
  );
  return `sweep pass done\n${renderPairs(pairs)}\n\n${table}`;
}
