/**
 * Command-line flags of `npm run soak -- [flags]`. Defaults fit a 2-core CI box: one minute of
 * traffic from 16 lanes against one Pinboard process and three workers.
 */
import { parseArgs } from "node:util";

export interface SoakArgs {
  /** Minutes of measured traffic (after the warm-up); fractions allowed. */
  minutes: number;
  /** Requests (or WebSocket sessions) in flight at most. */
  concurrency: number;
  /** Workers running at any time (churn replaces one at a time). */
  workers: number;
  /** Seconds between worker churns (stop the oldest, start a new one); 0 disables churn. */
  churnSeconds: number;
  /** Seconds between operator drains (cordon or timed, then undrain); 0 disables them. */
  drainSeconds: number;
  /** Seconds between progress reports. */
  reportSeconds: number;
  /** PINBOARD_LEASE_TTL_MS of the Pinboard process (short, so churn and drains play out quickly). */
  leaseMs: number;
  /** Ids of the hot set, hit over and over. */
  hotIds: number;
  /** Distinct "new" ids before they repeat (bounds the workers' instance tables on long runs). */
  newIdPool: number;
  /** Fail when Pinboard's RSS at the end exceeds the baseline by more than this fraction. */
  rssGrowth: number;
  /** Fail when Pinboard's RSS ever exceeds this many MB. */
  maxRssMb: number;
  /** Skip WebSocket sessions even when the Node entry proxies upgrades. */
  noWebSockets: boolean;
}

export const USAGE = `npm run soak -- [flags]

  --minutes N          minutes of measured traffic (default 1; fractions allowed)
  --concurrency N      requests / WebSocket sessions in flight (default 16)
  --workers N          workers running at any time (default 3)
  --churn-seconds N    stop the oldest worker and start a new one every N s (default 20; 0 = off)
  --drain-seconds N    operator drain + undrain of a worker every N s (default 15; 0 = off)
  --report-seconds N   progress report interval (default 10)
  --lease-ms N         PINBOARD_LEASE_TTL_MS of the Pinboard process (default 6000)
  --hot-ids N          size of the hot id set (default 32)
  --new-id-pool N      distinct new ids before they repeat (default 50000)
  --rss-growth F       fail past baseline × (1 + F) at the end (default 0.5)
  --max-rss-mb N       fail past N MB at any sample (default 768)
  --no-websockets      no WebSocket sessions
`;

export function parseSoakArgs(argv: string[]): SoakArgs {
  const { values } = parseArgs({
    args: argv,
    options: {
      minutes: { type: "string", default: "1" },
      concurrency: { type: "string", default: "16" },
      workers: { type: "string", default: "3" },
      "churn-seconds": { type: "string", default: "20" },
      "drain-seconds": { type: "string", default: "15" },
      "report-seconds": { type: "string", default: "10" },
      "lease-ms": { type: "string", default: "6000" },
      "hot-ids": { type: "string", default: "32" },
      "new-id-pool": { type: "string", default: "50000" },
      "rss-growth": { type: "string", default: "0.5" },
      "max-rss-mb": { type: "string", default: "768" },
      "no-websockets": { type: "boolean", default: false },
      help: { type: "boolean", default: false },
    },
    strict: true,
    allowPositionals: false,
  });
  if (values.help) {
    console.log(USAGE);
    process.exit(0);
  }
  const num = (name: string, value: string, min: number, max: number): number => {
    const n = Number(value);
    if (!Number.isFinite(n) || n < min || n > max)
      throw new Error(`--${name}: expected a number from ${min} to ${max}, got ${JSON.stringify(value)}`);
    return n;
  };
  const args: SoakArgs = {
    minutes: num("minutes", values.minutes, 0.05, 24 * 60),
    concurrency: Math.floor(num("concurrency", values.concurrency, 1, 1024)),
    workers: Math.floor(num("workers", values.workers, 2, 32)),
    churnSeconds: num("churn-seconds", values["churn-seconds"], 0, 3600),
    drainSeconds: num("drain-seconds", values["drain-seconds"], 0, 3600),
    reportSeconds: num("report-seconds", values["report-seconds"], 1, 3600),
    leaseMs: Math.floor(num("lease-ms", values["lease-ms"], 1000, 3_600_000)),
    hotIds: Math.floor(num("hot-ids", values["hot-ids"], 1, 1_000_000)),
    newIdPool: Math.floor(num("new-id-pool", values["new-id-pool"], 1, 100_000_000)),
    rssGrowth: num("rss-growth", values["rss-growth"], 0, 100),
    maxRssMb: num("max-rss-mb", values["max-rss-mb"], 16, 1_000_000),
    noWebSockets: values["no-websockets"],
  };
  return args;
}
