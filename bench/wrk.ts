/**
 * Saturated load from wrk (C, one thread, epoll): a client that costs far less per request than
 * any of the fronts it drives, so the front is what saturates. Each window runs
 * `wrk -t1 -c<connections> -d<seconds>s --latency -s <script> <url>` with a Lua script, written
 * to the bench's temp directory, that sets the fixed headers, produces each request's path from
 * a PathPlan, and at the end prints one JSON line with the exact figures: requests, duration,
 * the 50th and 99th percentile from wrk's own latency histogram (µs), non-2xx/3xx answers and
 * socket errors. wrk takes whole seconds only. wrk runs under `sh`, whose `times` then reports
 * the CPU seconds wrk used: a client busy for much less than the window was waiting on the front,
 * never the other way round.
 *
 * Paced (`rate` set): the script's `delay()` puts a random pause, uniform in [0, 2 × the mean gap]
 * with the mean gap connections / rate, before each request of each connection, so that the
 * connections together offer about `rate` requests/s, dephased from the first request on (a
 * connection's first request is delayed too). wrk times a request from its write to the end of
 * its answer: a stall delays the next send of that connection rather than being counted against
 * a schedule, as a client with think time would see it.
 */
import { execFile, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { luaPathFunction, luaString, type PathPlan } from "./paths.ts";

/**
 * Request headers: a string is sent on every request; an array (cycle plans only) holds one value
 * per path of the cycle, sent with that path (e.g. an attestation naming that call).
 */
export type WrkHeaders = Record<string, string | string[]>;

export interface WrkRun {
  url: string;
  plan: PathPlan;
  headers: WrkHeaders;
  connections: number;
  /** Whole seconds. */
  durationS: number;
  /** Offered requests/s over all connections (paced); unset: as fast as the front answers. */
  rate?: number;
}

export interface WrkResult {
  requests: number;
  seconds: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  /** Answers with a status ≥ 400 (wrk's "Non-2xx or 3xx responses"). */
  non2xx: number;
  /** Socket errors: connect, read, write and timeouts together. */
  errors: number;
  /** CPU seconds wrk used (user + system), null when `times` said nothing readable. */
  clientCpuS: number | null;
}

const REPORT = `
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format('\\n{"bench":"wrk","requests":%d,"durationUs":%d,"p50Us":%d,"p99Us":%d,"maxUs":%d,"status":%d,"connect":%d,"read":%d,"write":%d,"timeout":%d}\\n',
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(99), latency.max,
    e.status, e.connect, e.read, e.write, e.timeout))
end`;

let scriptDir: string | undefined;
let scripts = 0;

/** wrk's version line; exits the bench with the install command when wrk is not on PATH. */
export function requireWrk(): string {
  const r = spawnSync("wrk", ["--version"], { encoding: "utf8" });
  if (r.error) {
    console.error(
      "npm run bench needs wrk on PATH as its load generator: apt-get install wrk (Debian/Ubuntu), brew install wrk (macOS)",
    );
    process.exit(1);
  }
  return `${r.stdout}${r.stderr}`.split("\n")[0]!.trim();
}

/** Removes the scripts written so far (the bench calls it when it ends). */
export function removeWrkScripts(): void {
  if (scriptDir) rmSync(scriptDir, { recursive: true, force: true });
  scriptDir = undefined;
}

/** A think time before each request: uniform in [0, 2 × connections / rate] ms, so the mean rate is `rate`. */
function pacing(connections: number, rate: number): string {
  const maxGapMs = Math.max(1, Math.round((2000 * connections) / rate));
  return `math.randomseed(${Math.floor(Math.random() * 2 ** 31)})\ndelay = function() return math.random(0, ${maxGapMs}) end`;
}

function writeScript(o: WrkRun): string {
  scriptDir ??= mkdtempSync(join(tmpdir(), "pinboard-bench-wrk-"));
  const fixed = Object.entries(o.headers).filter((e): e is [string, string] => typeof e[1] === "string");
  const perPath = Object.entries(o.headers).filter((e): e is [string, string[]] => Array.isArray(e[1]));
  const setHeaders = fixed.map(([name, value]) => `wrk.headers[${luaString(name)}] = ${luaString(value)}`);
  const paced = o.rate === undefined ? [] : [pacing(o.connections, o.rate)];
  const lua = [
    luaPathFunction(o.plan),
    ...setHeaders,
    ...perPathHeaders(o.plan, perPath),
    ...paced,
    "request = function()",
    ...perPath.map((_, n) => `  wrk.headers[per_name_${n}] = per_value_${n}[(i % per_count) + 1]`),
    "  return wrk.format(nil, next_path())",
    "end",
    REPORT,
  ].join("\n");
  const file = join(scriptDir, `load-${scripts++}.lua`);
  writeFileSync(file, lua);
  return file;
}

/** Lua tables of the per-path header values, indexed like the cycle's paths (from 1, as Lua does). */
function perPathHeaders(plan: PathPlan, perPath: Array<[string, string[]]>): string[] {
  if (perPath.length === 0) return [];
  if (plan.kind !== "cycle") throw new Error("per-path headers need a cycle plan");
  const lines = [`local per_count = ${plan.count}`];
  perPath.forEach(([name, values], n) => {
    if (values.length !== plan.count) throw new Error(`${name}: ${values.length} values for ${plan.count} paths`);
    lines.push(
      `local per_name_${n} = ${luaString(name)}`,
      `local per_value_${n} = {${values.map(luaString).join(",")}}`,
    );
  });
  return lines;
}

/** One wrk run; rejects when wrk fails or prints no report. */
export function runWrk(o: WrkRun): Promise<WrkResult> {
  if (!Number.isInteger(o.durationS) || o.durationS < 1) throw new Error(`wrk takes whole seconds, got ${o.durationS}`);
  const script = writeScript(o);
  const args = [
    "-t1",
    `-c${o.connections}`,
    `-d${o.durationS}s`,
    "--timeout",
    "10s",
    "--latency",
    "-s",
    script,
    `${o.url}/`,
  ];
  return new Promise((resolve, reject) => {
    const shell = ["-c", 'wrk "$@"; s=$?; times; exit $s', "sh", ...args];
    execFile("sh", shell, { encoding: "utf8", timeout: (o.durationS + 30) * 1000 }, (err, stdout, stderr) => {
      const line = stdout.split("\n").find((l) => l.startsWith('{"bench":"wrk"'));
      if (err || !line)
        return reject(new Error(`wrk ${args.join(" ")} failed: ${err?.message ?? "no report"}\n${stdout}${stderr}`));
      const r = JSON.parse(line) as Record<string, number>;
      const ms = (us: number | undefined) => (us ?? 0) / 1000;
      resolve({
        requests: r.requests ?? 0,
        seconds: (r.durationUs ?? 0) / 1e6,
        p50Ms: ms(r.p50Us),
        p99Ms: ms(r.p99Us),
        maxMs: ms(r.maxUs),
        non2xx: r.status ?? 0,
        errors: (r.connect ?? 0) + (r.read ?? 0) + (r.write ?? 0) + (r.timeout ?? 0),
        clientCpuS: childCpuSeconds(stdout),
      });
    });
  });
}

/** The children's user + system seconds from the last line `times` printed ("0m1.23s 0m0.45s"). */
function childCpuSeconds(stdout: string): number | null {
  const last = stdout.trimEnd().split("\n").pop() ?? "";
  const m = /^(\d+)m([\d.]+)s\s+(\d+)m([\d.]+)s$/.exec(last.trim());
  return m ? Number(m[1]) * 60 + Number(m[2]) + Number(m[3]) * 60 + Number(m[4]) : null;
}
