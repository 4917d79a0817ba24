/**
 * Command-line flags of `npm run bench -- [flags]`. The defaults aim at about four minutes on a
 * 2-core machine: 6 s per scenario in 3 rounds of 2 s, a 100k-row fill (not the issue's 1M: pass
 * `--placements 1000000`), and at most 20 s for registering the large fleet. `--only` runs some
 * sections, for short runs while developing.
 */
import { parseArgs } from "node:util";

/** The parts of a run `--only` can pick. */
export const SECTIONS = ["fronts", "paced", "processes", "workerd", "floors", "scaling", "memory"] as const;
export type Section = (typeof SECTIONS)[number];

export interface BenchArgs {
  /** Live workers of the large fleet for the pinboard-new scaling check (0 skips it). */
  workers: number;
  /** Placement rows in the hot namespace for the pinboard-hot scaling check (0 skips it). */
  placements: number;
  connections: number;
  /** Measured seconds per scenario, over its rounds (the first round also gets 1 s of warm-up). */
  duration: number;
  /** Interleaved rounds of the fronts: each gets duration / rounds (whole seconds) per round; rows are medians. */
  rounds: number;
  /** Measured seconds per paced row, over the same rounds. */
  pacedDuration: number;
  /** Ids placed through Pinboard and then hammered by pinboard-hot. */
  hot: number;
  /** Seconds the large fleet may take to register before the check goes on with fewer workers. */
  registerBudget: number;
  /** Rows written for the Redis memory-per-row measurement. */
  memoryRows: number;
  /** CPU-profile Pinboard during pinboard-hot and pinboard-new (bench/profiles/*.cpuprofile). */
  profile: boolean;
  /** The sections that run (every one unless --only or --skip-workerd said otherwise). */
  sections: Set<Section>;
  out: string;
}

export const USAGE = `npm run bench -- [flags]

  --workers N       live workers in one namespace for the pinboard-new scaling check (default 1000; 0 skips)
  --placements N    placement rows for the pinboard-hot scaling check (default 100000; the issue's
                    check is 1000000: pass --placements 1000000)
  --connections N   concurrent connections / in-flight resolves (default 64)
  --duration S      measured seconds per scenario, split over the rounds in whole seconds (wrk
                    takes whole seconds); the first round has 1 s of warm-up more (default 6)
  --rounds N        the fronts (direct, plain, nginx, pinboard-*, workerd-*) run interleaved in N
                    rounds of duration/N seconds; each row is the median of its rounds (default 3)
  --paced-duration S  measured seconds per paced row, over the same rounds (default 15, rounds of
                    5 s: a p99 is one request in a hundred, and the more requests a round holds,
                    the less one stall of the machine moves it)
  --hot N           ids pre-placed and hammered by pinboard-hot (default 1000)
  --register-budget S  seconds the large fleet may spend registering; then the check runs with
                    the workers registered so far and says so (default 20)
  --memory-rows N   rows for Redis memory per placement row (default 100000)
  --profile         CPU-profile Pinboard during pinboard-hot and pinboard-new (bench/profiles/)
  --skip-workerd    do not run the Workers entry in workerd (the same as leaving workerd out of --only)
  --only LIST       run only these sections, comma-separated: ${SECTIONS.join(", ")}
                    (default: all). fronts: direct, plain, nginx, pinboard-hot/new, both answer
                    shapes; paced: the paced rows (needs fronts); processes: 1 vs 2 Pinboard
                    processes; floors: the Redis floors; scaling: hot@--placements, new@--workers;
                    memory: Redis bytes per row. E.g. --only fronts --duration 2 --rounds 1
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
      "paced-duration": { type: "string" },
      hot: { type: "string" },
      "memory-rows": { type: "string" },
      "register-budget": { type: "string" },
      profile: { type: "boolean" },
      "skip-workerd": { type: "boolean" },
      only: { type: "string" },
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
    duration: int("duration", values.duration, 6, 1),
    rounds: int("rounds", values.rounds, 3, 1),
    pacedDuration: int("paced-duration", values["paced-duration"], 15, 1),
    hot: int("hot", values.hot, 1000, 1),
    memoryRows: int("memory-rows", values["memory-rows"], 100_000, 1),
    registerBudget: int("register-budget", values["register-budget"], 20, 1),
    profile: values.profile ?? false,
    sections: sectionsOf(values.only, values["skip-workerd"] ?? false),
    out: values.out ?? "bench/results.json",
  };
}

function sectionsOf(only: string | undefined, skipWorkerd: boolean): Set<Section> {
  const names =
    only === undefined
      ? [...SECTIONS]
      : only
          .split(",")
          .map((n) => n.trim())
          .filter(Boolean);
  const unknown = names.filter((n) => !(SECTIONS as readonly string[]).includes(n));
  if (unknown.length || names.length === 0)
    throw new Error(`--only: expected some of ${SECTIONS.join(", ")}, got ${JSON.stringify(only)}`);
  const sections = new Set(names as Section[]);
  if (skipWorkerd) sections.delete("workerd");
  return sections;
}
