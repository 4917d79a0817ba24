/**
 * `npm run soak -- --minutes N`: mixed traffic against the real Node entry for N minutes, then a
 * verdict. Everything runs on loopback and stops by itself:
 *
 *   - a private redis-server, one Pinboard process (`src/node.ts`, lease --lease-ms), and
 *     --workers worker-library workers in this process;
 *   - --concurrency lanes of traffic (scripts/soak/traffic.ts): hot ids, new ids, bodies,
 *     WebSocket sessions through the Node entry's upgrade proxy (skipped, with a note, when this
 *     checkout has none), operator reads;
 *   - churn: every --churn-seconds the oldest worker drains, deregisters and closes, and a new
 *     one registers; operator drains (cordon, or timed every third time) and undrains every
 *     --drain-seconds;
 *   - every --report-seconds a line: requests by status, errors by kind, p50/p99, Pinboard's RSS
 *     (VmRSS of /proc/<pid>/status).
 *
 * Exit 0 when nothing failed: no 5xx the spec does not call for (its 503 refusals with
 * Retry-After are counted apart; a 502 is allowed only for a request that started during a churn;
 * the rules are in scripts/soak/traffic.ts), no error line in Pinboard's log, and Pinboard's RSS
 * at the end (the lower of the last two samples) within --rss-growth of the baseline (the largest
 * sample of the first minute on runs of 3 minutes or more; on shorter runs, of the first half
 * after 10 s of traffic, and twice the growth) and never above --max-rss-mb.
 * Exit 1 on a failure, 2 when the run itself broke (setup failed, or the hard deadline passed).
 * The last line is always `SOAK SUMMARY result=PASS|FAIL …`.
 */
import { parseSoakArgs, type SoakArgs } from "./soak/args.ts";
import { SoakCluster, sleep } from "./soak/cluster.ts";
import { SoakStats } from "./soak/stats.ts";
import { probeWebSockets, Traffic } from "./soak/traffic.ts";

const log = (line: string) => console.log(line);

async function main(args: SoakArgs): Promise<number> {
  const cluster = new SoakCluster({ leaseMs: args.leaseMs, log });
  const measuredMs = args.minutes * 60_000;
  // Setup, warm-up and teardown get their own minutes: the run can never outlive this.
  const hardDeadline = setTimeout(
    () => {
      log(`SOAK SUMMARY result=FAIL reason=hard-deadline minutes=${args.minutes}`);
      void cluster.stop().finally(() => process.exit(2));
      setTimeout(() => process.exit(2), 10_000).unref();
    },
    measuredMs + 3 * 60_000 + 10 * args.leaseMs,
  );
  hardDeadline.unref();

  let stats: SoakStats | undefined;
  try {
    log(
      `soak: ${args.minutes} min, ${args.concurrency} lanes, ${args.workers} workers, churn every ${args.churnSeconds || "-"} s, drains every ${args.drainSeconds || "-"} s, lease ${args.leaseMs} ms`,
    );
    await cluster.start(args.workers);
    log(`soak: pinboard pid ${cluster.pid} at ${cluster.url}, redis ${cluster.redis.url}`);

    let webSockets = !args.noWebSockets;

    // Warm-up, not measured: touch every bucket (the cold-start quarantine is one lease per
    // bucket from its first resolve), then wait until the hot ids are placed.
    const warmUntil = Date.now() + 2 * args.leaseMs + 20_000;
    for (let i = 0; i < 256; i++)
      await fetch(`${cluster.url}/soak/warm-${i}`).then(
        (r) => r.body?.cancel(),
        () => {},
      );
    let ready = 0;
    while (Date.now() < warmUntil && ready < args.hotIds) {
      ready = 0;
      for (let i = 0; i < args.hotIds; i++) {
        const res = await fetch(`${cluster.url}/soak/hot-${i}`).catch(() => null);
        if (res?.status === 200) ready++;
        await res?.body?.cancel();
      }
      if (ready < args.hotIds) await sleep(250);
    }
    while (Date.now() < warmUntil && (await cluster.quarantineMs()) > 0) await sleep(250);
    log(`soak: warm-up done, ${ready}/${args.hotIds} hot ids placed, cold start over`);
    if (webSockets) {
      const probe = await probeWebSockets(cluster.url);
      if (!probe.ok) {
        log(`soak: note: WebSocket proxying is not available (${probe.why}); WebSocket sessions skipped`);
        webSockets = false;
      }
    }

    stats = new SoakStats();
    const run = stats;
    const traffic = new Traffic(cluster, run, { hotIds: args.hotIds, newIdPool: args.newIdPool, webSockets });
    const until = Date.now() + measuredMs;
    run.sampleRss(await cluster.rssMb());
    let seenErrorLines = 0;
    const checkLog = () => {
      for (const line of cluster.errorLines.slice(seenErrorLines))
        run.failure("pinboard logged an error", line.slice(0, 400));
      seenErrorLines = cluster.errorLines.length;
    };

    const background: Promise<void>[] = [];
    const every = (seconds: number, first: number, task: () => Promise<void>) => {
      if (seconds <= 0) return;
      background.push(
        (async () => {
          let next = Date.now() + first * 1000;
          while (next < until) {
            await sleep(Math.max(0, next - Date.now()));
            if (Date.now() >= until) break;
            await task().catch((err: unknown) => run.failure("background task crashed", String(err)));
            next += seconds * 1000;
          }
        })(),
      );
    };
    every(args.churnSeconds, args.churnSeconds, () => cluster.churn());
    every(args.drainSeconds, Math.max(1, args.drainSeconds / 2), () => cluster.drain());
    every(args.reportSeconds, args.reportSeconds, async () => {
      run.sampleRss(await cluster.rssMb());
      checkLog();
      log(run.report(`workers ${cluster.workers.length} (churns ${cluster.churnCount}, drains ${cluster.drainCount})`));
    });

    const lanes = Array.from({ length: args.concurrency }, () => traffic.lane(until));
    await Promise.all(lanes);
    await Promise.all(background);
    run.sampleRss(await cluster.rssMb());
    checkLog();
    if (Date.now() - run.started > 1000)
      log(run.report(`workers ${cluster.workers.length} (churns ${cluster.churnCount}, drains ${cluster.drainCount})`));

    return summarize(run, args, webSockets, cluster);
  } catch (err) {
    log(`soak: setup or run failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
    const recent = cluster.recentOutput();
    if (recent) log(`soak: pinboard output (last lines):\n${recent}`);
    log(`SOAK SUMMARY result=FAIL reason=crashed minutes=${args.minutes} requests=${stats?.requests ?? 0}`);
    return 2;
  } finally {
    await cluster.stop().catch(() => {});
    clearTimeout(hardDeadline);
  }
}

function summarize(run: SoakStats, args: SoakArgs, webSockets: boolean, cluster: SoakCluster): number {
  // The RSS bound. A young Node process grows for a minute or two whatever it does (JIT code,
  // heap sized up to the load), so: on runs of 3 minutes or more the baseline is the largest
  // sample of the first minute and the end may exceed it by --rss-growth; on shorter runs (CI's
  // one minute) the baseline is the largest sample of the first half after 10 s of traffic and
  // the end may exceed it by twice that. The end is the lower of the last two samples: a leak
  // raises the floor, while one sample can catch the top of a GC sawtooth (on a loaded machine,
  // V8 collects late). --max-rss-mb bounds every sample.
  const samples = run.rss;
  const long = args.minutes >= 3;
  const largest = (list: typeof samples) => list.reduce((m, s) => (s.mb > m.mb ? s : m), list[0]!);
  const firstMinute = samples.filter((s) => s.atS <= 60);
  const firstHalf = samples.filter((s) => s.atS >= 9 && s.atS <= (args.minutes * 60) / 2);
  const baselineSample = long ? largest(firstMinute) : firstHalf.length ? largest(firstHalf) : samples[0];
  const baseline = baselineSample?.mb ?? 0;
  const end = samples.length ? Math.min(...samples.slice(-2).map((s) => s.mb)) : 0;
  const max = samples.reduce((m, s) => Math.max(m, s.mb), 0);
  const growth = long ? args.rssGrowth : 2 * args.rssGrowth;
  const growthLimit = baseline * (1 + growth);

  const reasons: string[] = [];
  if (run.failures > 0) reasons.push(`${run.failures} failures`);
  if (samples.length === 0) reasons.push("no RSS sample");
  if (baseline > 0 && end > growthLimit)
    reasons.push(`RSS grew from ${baseline.toFixed(1)} MB to ${end.toFixed(1)} MB (> ${(growth * 100).toFixed(0)}%)`);
  if (max > args.maxRssMb) reasons.push(`RSS reached ${max.toFixed(1)} MB (> ${args.maxRssMb} MB)`);
  if (run.requests === 0) reasons.push("no requests");

  const count = (prefix: string) =>
    [...run.allowedKinds].filter(([k]) => k.startsWith(prefix)).reduce((s, [, n]) => s + n, 0);
  log("");
  log("soak: totals by status:");
  for (const [label, n] of run.totalsByLabel()) log(`  ${label.padEnd(18)} ${n}`);
  log("soak: allowed non-200 answers by kind (spec'd refusals and churn effects):");
  if (run.allowedKinds.size === 0) log("  none");
  for (const [kind, n] of [...run.allowedKinds].sort((a, b) => b[1] - a[1])) log(`  ${String(n).padStart(7)}  ${kind}`);
  log("soak: failures by kind:");
  if (run.failureKinds.size === 0) log("  none");
  for (const [kind, n] of [...run.failureKinds].sort((a, b) => b[1] - a[1])) {
    log(`  ${String(n).padStart(7)}  ${kind}`);
    for (const example of run.examples.get(kind) ?? []) log(`             e.g. ${example}`);
  }
  log(`soak: pinboard RSS MB over time: ${samples.map((s) => `${Math.round(s.atS)}s=${s.mb.toFixed(1)}`).join(" ")}`);
  log(
    `soak: RSS baseline ${baseline.toFixed(1)} MB (limit ${growthLimit.toFixed(1)} MB at the end, ${args.maxRssMb} MB ever)`,
  );
  if (!webSockets) log("soak: note: no WebSocket sessions in this run");

  const pass = reasons.length === 0;
  log(
    `SOAK SUMMARY result=${pass ? "PASS" : "FAIL"} minutes=${args.minutes} requests=${run.requests} ` +
      `ok=${run
        .totalsByLabel()
        .filter(([l]) => l === "200" || l === "ws" || l === "op 200")
        .reduce((s, [, n]) => s + n, 0)} ` +
      `refusals503=${count("503 ")} churn502=${count("502 ")} stale409=${count("409 ")} ws_lost=${count("ws ")} failures=${run.failures} ` +
      `p50_ms=${run.p(0.5).toFixed(1)} p99_ms=${run.p(0.99).toFixed(1)} ` +
      `rss_baseline_mb=${baseline.toFixed(1)} rss_end_mb=${end.toFixed(1)} rss_max_mb=${max.toFixed(1)} ` +
      `churns=${cluster.churnCount} drains=${cluster.drainCount} websockets=${webSockets ? "on" : "off"}` +
      (pass ? "" : ` reason="${reasons.join("; ")}"`),
  );
  return pass ? 0 : 1;
}

let args: SoakArgs;
try {
  args = parseSoakArgs(process.argv.slice(2));
} catch (err) {
  console.error(err instanceof Error ? err.message : String(err));
  process.exit(2);
}
const code = await main(args);
process.exit(code);
