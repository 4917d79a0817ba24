/**
 * Command-line flags of `npm run bench -- [flags]`. The defaults aim at under two minutes on a
 * 2-core machine: 4 s per scenario, a 100k-row fill (not the issue's 1M: pass
 * `--placements 1000000`), and at most 20 s for registering the large fleet (registration is
 * O(fleet) per worker today, so 1000 workers may need `--register-budget 120`).
 */
import { parseArgs } from "node:util";

export interface BenchArgs {
  /** Live workers of the large fleet for the pinboard-new scaling check (0 skips it). */
  workers: number;
  /** Placement rows in the hot namespace for the pinboard-hot scaling check (0 skips it). */
  placements: number;
  connections: number;
  /** Measured seconds per scenario (each window also gets a short warm-up). */
  duration: number;
  /** Interleaved rounds of baseline / pinboard-hot / pinboard-new / workerd-*: each gets duration / rounds per round. */
  rounds: number;
  /** Ids placed through Pinboard and then hammered by pinboard-hot. */
  hot: number;
  /** Seconds the large fleet may take to register before the check goes on with fewer workers. */
  registerBudget: number;
  /** Rows written for the Redis memory-per-row measurement. */
  memoryRows: number;
  /** CPU-profile Pinboard during pinboard-hot and pinboard-new (bench/profiles/*.cpuprofile). */
  profile: boolean;
  /** Skip the Workers entry (workerd through Miniflare). */
  skipWorkerd: boolean;
  out: string;
}

export const USAGE = `npm run bench -- [flags]

  --workers N       live workers in one namespace for the pinboard-new scaling check (default 1000; 0 skips)
  --placements N    placement rows for the pinboard-hot scaling check (default 100000; the issue's
                    check is 1000000: pass --placements 1000000)
  --connections N   concurrent connections / in-flight resolves (default 64)
  --duration S      measured seconds per scenario, after a 1 s warm-up (default 4)
  --rounds N        baseline, pinboard-hot, pinboard-new and workerd-* run interleaved in N rounds
                    of duration/N seconds each, so drifting machine load skews them alike (default 2)
  --hot N           ids pre-placed and hammered by pinboard-hot (default 1000)
  --register-budget S  seconds the large fleet may spend registering; then the check runs with
                    the workers registered so far and says so (default 20)
  --memory-rows N   rows for Redis memory per placement row (default 100000)
  --profile         CPU-profile Pinboard during pinboard-hot and pinboard-new (bench/profiles/)
  --skip-workerd    do not run the Workers entry in workerd
  --out FILE        results file (default bench/results.json)`;

function int(name: string, value: string | undefined, fallback: number, min: number): number {
  if (value === undefined) return fallback;
  const n = Number(value.replace(/_/g, ""));
  if (!Number.isFinite(n) || n < min || (name !== "duration" && !Number.isInteger(n))) {
    throw new Error(`--${name}: expected a number ≥ ${min}, got ${JSON.stringify(value)}`);
  }
  return n;
}

export function parseBenchArgs(argv: string[]): BenchArgs | "help" {
  const { values } = parseArgs({
    args: argv,
    options: {
      workers: { type: "string" },
      placements: { type: "string" },
      connections: { type: "string" },
      duration: { type: "string" },
      rounds: { type: "string" },
      hot: { type: "string" },
      "memory-rows": { type: "string" },
      "register-budget": { type: "string" },
      profile: { type: "boolean" },
      "skip-workerd": { type: "boolean" },
      out: { type: "string" },
      help: { type: "boolean", short: "h" },
    },
    strict: true,
    allowPositionals: false,
  });
  if (values.help) return "help";
  return {
    workers: int("workers", values.workers, 1000, 0),
    placements: int("placements", values.placements, 100_000, 0),
    connections: int("connections", values.connections, 64, 1),
    duration: int("duration", values.duration, 4, 0.5),
    rounds: int("rounds", values.rounds, 2, 1),
    hot: int("hot", values.hot, 1000, 1),
    memoryRows: int("memory-rows", values["memory-rows"], 100_000, 1),
    registerBudget: int("register-budget", values["register-budget"], 20, 1),
    profile: values.profile ?? false,
    skipWorkerd: values["skip-workerd"] ?? false,
    out: values.out ?? "bench/results.json",
  };
}
