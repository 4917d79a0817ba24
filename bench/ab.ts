/**
 * `npm run bench:ab -- --a <dist> [--b <dist>]`: two builds of Pinboard side by side on one
 * Redis and one worker fleet, in alternating windows of the same load, so a change is judged
 * against the build before it on the same machine at the same moment (this machine's speed
 * drifts by tens of percent over an hour; two full `npm run bench` runs cannot see a 5 % change).
 *
 * A build is a `dist/` directory made by `npm run build`, e.g. of an older commit:
 *   git worktree add /tmp/before HEAD~1 && ln -s "$PWD/node_modules" /tmp/before/ &&
 *   (cd /tmp/before && npm run build) && npm run bench:ab -- --a /tmp/before/dist
 * --b defaults to this checkout's dist/ (built by the prebench:ab step). Both run with
 * `npm start`'s flags unless --a-flags / --b-flags say otherwise, given with "=" since the value
 * starts with a dash: "--b-flags=--max-semi-space-size=32".
 */
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { startNodeFlags } from "../bin/node-flags.mjs";
import { freePort } from "../src/runtime/node/process/free-port.ts";
import { type Child, installReaper, killAll, ROOT, spawnNode } from "./children.ts";
import { type LoadSpec, loadWindow, mb } from "./load.ts";
import { cycle, fresh } from "./paths.ts";
import { placeThroughPinboard, startColdStartWindows } from "./placements.ts";
import { peakRssBytes } from "./proc-stats.ts";
import { LEASE_MS, pinboardSettings, startTopology, type Topology } from "./topology.ts";
import { removeWrkScripts, requireWrk } from "./wrk.ts";

const USAGE = `npm run bench:ab -- --a <dist dir> [flags]

  --a DIR            the first build's dist/ directory (required)
  --b DIR            the second build's dist/ (default: this checkout's dist/)
  --a-flags=".."     Node flags for A (default: package.json config.nodeFlags, as npm start)
  --b-flags=".."     Node flags for B (default: the same)
  --load hot|new     live placements cycled, or a new id per request (default hot)
  --rounds N         alternating windows per build (default 4)
  --duration S       whole seconds per window (wrk), after 1 s of warm-up (default 3)
  --connections N    (default 64)`;

interface Side {
  label: string;
  child: Child;
  url: string;
  requests: number;
  seconds: number;
  cpu: number;
  gcMs: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function startBuild(top: Topology, label: string, dist: string, flags: string[]): Promise<Side> {
  const port = await freePort();
  const env = { PORT: String(port), HOST: "127.0.0.1", REDIS_URL: top.redis.url, ...pinboardSettings(top.secret) };
  const child = spawnNode(`pinboard-${label}`, join(resolve(ROOT, dist), "bench/pinboard-main.js"), env, flags);
  await child.next((m) => m.bench === "ready", 60_000);
  return {
    label: `${label} (${dist}${flags.length ? ` ${flags.join(" ")}` : ""})`,
    child,
    url: `http://127.0.0.1:${port}`,
    requests: 0,
    seconds: 0,
    cpu: 0,
    gcMs: 0,
  };
}

/** GC pause milliseconds since the last reset, all kinds together (pinboard-main's `mem`). */
async function gcPauseMs(child: Child): Promise<number> {
  child.send("mem");
  const mem = await child.next<{ gc: Record<string, { totalMs: number }> }>((m) => m.bench === "mem");
  return Object.values(mem.gc).reduce((sum, g) => sum + g.totalMs, 0);
}

async function main(argv: string[]): Promise<void> {
  const { values } = parseArgs({
    args: argv,
    options: {
      a: { type: "string" },
      b: { type: "string", default: "dist" },
      "a-flags": { type: "string" },
      "b-flags": { type: "string" },
      load: { type: "string", default: "hot" },
      rounds: { type: "string", default: "4" },
      duration: { type: "string", default: "3" },
      connections: { type: "string", default: "64" },
      help: { type: "boolean", short: "h" },
    },
  });
  const [rounds, durationS, connections] = [Number(values.rounds), Number(values.duration), Number(values.connections)];
  if (
    values.help ||
    !values.a ||
    !["hot", "new"].includes(values.load!) ||
    ![rounds, durationS, connections].every((n) => n > 0)
  ) {
    console.log(USAGE);
    process.exit(values.help ? 0 : 2);
  }
  requireWrk();
  const flagsOf = (given: string | undefined) =>
    given === undefined ? startNodeFlags() : given.split(/\s+/).filter(Boolean);

  const top = await startTopology({ workers: 10, namespaces: ["/hot"] });
  const sides = [
    await startBuild(top, "A", values.a, flagsOf(values["a-flags"])),
    await startBuild(top, "B", values.b!, flagsOf(values["b-flags"])),
  ];
  const quarantineEnds = await startColdStartWindows(
    top.pinboard.url,
    "/hot",
    top.keys.shards,
    top.admin,
    top.keys,
    LEASE_MS,
  );
  console.error(`waiting out the cold-start lease (${LEASE_MS / 1000} s), then placing 1000 ids`);
  await sleep(quarantineEnds - Date.now() + 250);
  const ids = Array.from({ length: 1000 }, (_, i) => `h-${i}`);
  await placeThroughPinboard(top.pinboard.url, "/hot", ids);

  const plan = values.load === "new" ? fresh("/hot/n-", "length") : cycle("/hot/h-", ids.length, "length");
  const spec = (side: Side): LoadSpec => ({ name: side.label, url: side.url, plan, pids: { proxy: side.child.pid } });
  for (const side of sides) await loadWindow(spec(side), { connections, durationS: 2, warmupS: 0 });
  for (let round = 0; round < rounds; round++) {
    for (const side of sides) {
      side.child.send("eld-reset");
      const w = await loadWindow(spec(side), { connections, durationS, warmupS: 1 });
      side.requests += w.requests;
      side.seconds += w.seconds;
      side.cpu += w.cpu.proxy ?? 0;
      side.gcMs += await gcPauseMs(side.child);
      console.error(`round ${round + 1} ${side.label}: ${(w.requests / w.seconds).toFixed(0)} req/s`);
    }
  }

  const rows = sides.map((s) => ({
    rps: s.requests / s.seconds,
    cpu: (s.cpu / s.requests) * 1e4,
    gc: (s.gcMs / s.requests) * 1e4,
    rss: mb(peakRssBytes(s.child.pid)) ?? NaN,
  }));
  console.log(`\n${values.load} load, ${connections} connections, ${rounds} × ${durationS} s per build, alternating\n`);
  sides.forEach((s, k) => {
    const r = rows[k]!;
    console.log(
      `${s.label}\n  ${r.rps.toFixed(0)} req/s, ${r.cpu.toFixed(2)} CPU s / 10k req, ${r.gc.toFixed(0)} ms GC pause / 10k req, peak RSS ${r.rss.toFixed(0)} MB`,
    );
  });
  const [a, b] = rows as [(typeof rows)[0], (typeof rows)[0]];
  console.log(
    `\nB / A: ${(b.rps / a.rps).toFixed(3)} × req/s, ${(b.cpu / a.cpu).toFixed(3)} × CPU per request, ${(b.rss / a.rss).toFixed(3)} × peak RSS`,
  );
  await Promise.all(sides.map((s) => s.child.stop()));
  await top.stop();
}

installReaper(async () => {
  removeWrkScripts();
  killAll();
});
main(process.argv.slice(2)).then(
  () => {
    removeWrkScripts();
    process.exit(0);
  },
  (err: unknown) => {
    console.error(err instanceof Error ? (err.stack ?? err.message) : String(err));
    removeWrkScripts();
    killAll();
    process.exit(1);
  },
);
