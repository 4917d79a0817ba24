import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "../../src/cli/main.ts";
import type { OverviewReply, WorkersReply } from "../../src/cli/replies.ts";
import { Keys, SINGLE_ENV } from "../../src/redis/keys.ts";
import { freePort } from "../../src/runtime/node/process/free-port.ts";
import { type ChallengeServer, startChallengeServer } from "../support/challenge-server.ts";
import { type Fleet, type FleetWorker, startFleet } from "../support/fleet.ts";
import { TEST_PASSPORT_SECRET } from "../support/pinboard-app.ts";
import { registerBody } from "../support/registration.ts";
import { getRow, putRow, putRows } from "../support/rows.ts";
import { type CliRun, spawnCli as spawnCliProcess } from "./cli-process.ts";

/**
 * The operator CLI as operators run it: a separate process (`node --import tsx src/cli/main.ts`,
 * and once through bin/pinboard.mjs) against the real Pinboard Node entry, real Redis, a worker
 * built on the worker library and two challenge-only workers registered over HTTP.
 */

/** Long enough that the challenge-only workers (no heartbeats) stay live for the whole file. */
const LEASE_MS = 600_000;
const SERVER_ENV = {
  PINBOARD_LEASE_TTL_MS: String(LEASE_MS),
  PINBOARD_SWEEP_INTERVAL_MS: "3600000",
  PINBOARD_BASE_PATH: "/pb",
};

let fleet: Fleet;
let real: FleetWorker;
let worker: ChallengeServer;
let token: string;
let a: string;
let b: string;

type Run = CliRun;

/** CLI processes at once: enough to overlap start-up, few enough for a two-core runner. */
const MAX_PARALLEL = 4;
let running = 0;
const waiting: Array<() => void> = [];

async function cli(
  args: readonly string[],
  options: { env?: Record<string, string>; launcher?: boolean } = {},
): Promise<Run> {
  // A finishing run hands its slot straight to the next waiter.
  if (running >= MAX_PARALLEL) await new Promise<void>((resolve) => waiting.push(resolve));
  else running++;
  try {
    return await spawnCli(args, options);
  } finally {
    const next = waiting.shift();
    if (next) next();
    else running--;
  }
}

function spawnCli(
  args: readonly string[],
  options: { env?: Record<string, string>; launcher?: boolean },
): Promise<Run> {
  return spawnCliProcess(args, {
    ...options,
    env: { PINBOARD_URL: fleet.pb.url, PINBOARD_OPERATOR_TOKEN: token, ...options.env },
  });
}

/** A command's --json output, read as `T` (the answer types of src/cli/replies.ts). */
async function cliJson<T = unknown>(args: readonly string[], env?: Record<string, string>): Promise<T> {
  const run = await cli([...args, "--json"], env ? { env } : {});
  expect(run.stderr).toBe("");
  expect(run.code).toBe(0);
  return JSON.parse(run.stdout) as T;
}

async function register(body: Record<string, unknown>): Promise<string> {
  const res = await fetch(`${fleet.pb.url}/registry/register`, {
    method: "POST",
    headers: { authorization: `Bearer ${await fleet.pb.workerCredential()}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  const json = (await res.json()) as { sessionId: string };
  if (res.status !== 200) throw new Error(`register answered ${res.status}: ${JSON.stringify(json)}`);
  return json.sessionId;
}

beforeAll(async () => {
  fleet = await startFleet({ workers: 0, env: SERVER_ENV });
  real = await fleet.addWorker({ clientId: "cli-real" });
  worker = await startChallengeServer();
  token = await fleet.pb.operatorCredential();
  a = await register(registerBody(worker, { clientId: "cli-a", namespaces: ["/threads", "/rooms"] }));
  b = await register(registerBody(worker, { clientId: "cli-b", namespaces: ["/rooms"] }));
  for (let bucket = 0; bucket < 16; bucket++)
    await fleet.t.redis.client.sadd(`pinboard:{${bucket}}:spaces`, "*\n/threads");
  await putRow(fleet.t, "/threads", "H~1", { sessionId: a, epoch: "10", tag: "ws:W" });
  await putRow(fleet.t, "/threads", "H~2", { sessionId: a, epoch: "11" });
  await putRow(fleet.t, "/threads", "Z~3", { sessionId: a, epoch: "12", tag: "ws:W" });
});
afterAll(async () => {
  await fleet?.close();
  await worker?.close();
});

/** The column a header starts at equals where its values start on every row: aligned. */
function expectAligned(table: string, header: string, value: string): void {
  const [head, ...rows] = table.trim().split("\n");
  const row = rows.find((r) => r.includes(value));
  expect(row, `a row with ${value}`).toBeDefined();
  expect(row!.indexOf(value)).toBe(head!.indexOf(header));
}

// Read-only and refused commands change nothing: they run side by side.
describe.concurrent("pinboard CLI reads", { timeout: 120_000 }, () => {
  it("lists workers as an aligned table and as the server's JSON", async () => {
    // The table comes through the launcher, which passes argv, stdout and the exit status on.
    const [table, json] = await Promise.all([cli(["workers"], { launcher: true }), cliJson<WorkersReply>(["workers"])]);
    expect(table.code).toBe(0);
    expect(table.stderr).toBe("");
    const lines = table.stdout.trim().split("\n");
    expect(lines[0]).toMatch(/^SESSION +CLIENT +HOSTNAME +NAMESPACES +HEADROOM +DRAINING +DEGRADED +EXPIRES-IN$/);
    expect(lines).toHaveLength(4);
    const rowA = lines.find((l) => l.startsWith(a))!;
    expect(rowA).toMatch(new RegExp(`^${a} +cli-a +- +/threads,/rooms +100 +no +- +\\d+s$`));
    const expiresIn = Number(/(\d+)s$/.exec(rowA)![1]);
    expect(expiresIn).toBeGreaterThan(LEASE_MS / 1000 - 120);
    expect(expiresIn).toBeLessThanOrEqual(LEASE_MS / 1000);
    expectAligned(table.stdout, "CLIENT", "cli-b");
    expectAligned(table.stdout, "NAMESPACES", "/echo");

    const ids = json.workers.map((w) => w.sessionId);
    expect(ids).toEqual([...ids].sort());
    expect(ids).toEqual(expect.arrayContaining([a, b, real.worker.sessionId!]));
    expect(json.workers.find((w) => w.sessionId === b)).toMatchObject({
      clientId: "cli-b",
      namespaces: ["/rooms"],
      draining: false,
    });
    expect(JSON.stringify(json)).not.toContain(worker.secret);
    expect(lines.slice(1).map((l) => l.split(" ")[0])).toEqual(ids);
  });

  it("follows the overview's cursor: of 30000 placements, the tagged ones the walk reaches last are shown", async () => {
    const keys = new Keys("pinboard:", 16);
    const far: string[] = [];
    const rows = Array.from({ length: 30_000 }, (_, i) => {
      const id = `bulk-${i}`;
      // The walk goes bucket by bucket; one request stops after about 20000 rows, before bucket 15.
      const isFar = keys.bucketOf(id) === 15 && far.length < 3;
      if (isFar) far.push(id);
      const tag = isFar ? "far" : "";
      return { id, row: { sessionId: a, epoch: "1", tag } };
    });
    await putRows(fleet.t, "/bulk", rows);
    try {
      const json = await cliJson<OverviewReply & { cursor?: string }>(["overview", "--ns", "/bulk", "--tag", "far"]);
      expect(json.cursor).toBeUndefined();
      expect(json.namespaces.map((n) => n.namespace)).toEqual(["/bulk"]);
      expect(json.namespaces[0]!.entries.map((e) => e.id).sort()).toEqual([...far].sort());
    } finally {
      for (let b = 0; b < 16; b++) {
        await fleet.t.redis.client.del(keys.placements(b, SINGLE_ENV, "/bulk"));
        await fleet.t.redis.client.srem(keys.spaces(b), `${SINGLE_ENV}\n/bulk`);
      }
    }
  });

  it("shows the overview with its filters ANDed", async () => {
    const [filtered, table, invalid] = await Promise.all([
      cliJson<OverviewReply>(["overview", "--ns", "/threads", "--prefix", "H~", "--tag", "ws:W"]),
      cli(["overview", "--ns", "/threads", "--tag", "ws:W"]),
      cli(["overview", "--ns", "threads"]),
    ]);
    expect(filtered.namespaces).toEqual([
      {
        hostname: null,
        env: null,
        namespace: "/threads",
        sessionIds: [a],
        entries: [{ id: "H~1", sessionId: a, tag: "ws:W" }],
      },
    ]);

    expect(table.code).toBe(0);
    const sections = table.stdout.trim().split("\n\n");
    expect(sections[0]).toMatch(/^WORKERS \(3\)\nSESSION +CLIENT/);
    expect(sections[1]).toMatch(/^NAMESPACES \(1\)\nNAMESPACE +WORKERS +PLACEMENTS\n\/threads +1 +2$/);
    const placements = sections[2]!.split("\n");
    expect(placements[0]).toBe("PLACEMENTS (2)");
    // Owners by clientId, not by 32-hex session (the session stays in --json, above).
    expect(placements[1]).toMatch(/^NAMESPACE +ID +CLIENT +TAG +WIND-DOWN$/);
    expect(placements.slice(2).map((l) => l.split(/ +/)[1])).toEqual(["H~1", "Z~3"]);
    expect(placements[2]).toMatch(/^\/threads +H~1 +cli-a +ws:W +-$/);

    expect(invalid).toEqual({ code: 1, stdout: "", stderr: "pinboard: invalid namespace (HTTP 400)\n" });
  });

  it("shows stats and health", async () => {
    const [stats, health] = await Promise.all([cli(["stats"]), cli(["health"])]);
    expect(stats).toMatchObject({ code: 0, stderr: "" });
    const lines = stats.stdout.trim().split("\n");
    expect(lines[0]).toMatch(
      /^SESSION +CLIENT +HOSTNAME +STATUS +INSTANCES +INFLIGHT +SOCKETS +HEADROOM +DRAINING +LEASE +UPTIME$/,
    );
    expect(lines.find((l) => l.startsWith(real.worker.sessionId!))).toMatch(
      / cli-real +- +ok +0 +0 +0 +\d+ +no +healthy +\d+s$/,
    );
    expect(lines.find((l) => l.startsWith(a))).toMatch(/ cli-a +- +unreachable +- +- +- +- +- +- +-$/);
    expect(health).toMatchObject({ code: 0, stderr: "" });
    expect(health.stdout).toMatch(
      /^ready: +yes\nuptime: +\d+s\nconnections: +\d+\ncold start: +(no window open|\d+s left)[^\n]*\nmemory \(rss\): +[\d.]+ MiB\n\nRESOLUTIONS\n/,
    );
  });

  it("prints the server's error string and status for a narrow credential, and exits 1", async () => {
    const narrow = await fleet.pb.operatorCredential({ namespaces: ["/elsewhere"] });
    const rowBefore = await getRow(fleet.t, "/threads", "H~1");
    const [drain, windDown, seen] = await Promise.all([
      cli(["drain", "cli-a", "--token", narrow]),
      cli(["wind-down", "/threads", "H~1", "--deadline", "30"], { env: { PINBOARD_OPERATOR_TOKEN: narrow } }),
      cliJson<WorkersReply>(["workers"], {
        PINBOARD_OPERATOR_TOKEN: await fleet.pb.operatorCredential({ namespaces: ["/rooms"] }),
      }),
    ]);
    // The server's string stays first and exact; the hint says why, from what the credential holds.
    expect(drain).toEqual({
      code: 1,
      stdout: "",
      stderr:
        "pinboard: forbidden (HTTP 403)\n" +
        "hint: `pinboard drain` needs the pinboard:operator scope, which the credential from --token has; " +
        'so Pinboard refused the client: "cli-a" is unknown, or its workers are outside the credential\'s ' +
        "namespaces, hostnames or envs\n",
    });
    expect(windDown).toEqual({
      code: 1,
      stdout: "",
      stderr:
        "pinboard: namespace not allowed: /threads (HTTP 403)\n" +
        "hint: the credential's pinboard claim does not cover it: use one minted with --namespaces including it (or '*')\n",
    });
    // Refused means untouched (the real worker's heartbeats keep other keys moving).
    expect(await getRow(fleet.t, "/threads", "H~1")).toEqual(rowBefore);
    expect(await fleet.t.redis.client.exists("pinboard:{global}:drain:cli-a")).toBe(0);
    // A narrow credential reads only its namespaces.
    expect(seen.workers.map((w) => [w.clientId, w.namespaces])).toEqual(
      expect.arrayContaining([
        ["cli-a", ["/rooms"]],
        ["cli-b", ["/rooms"]],
      ]),
    );
    expect(seen.workers).toHaveLength(2);
  });

  it("exits 2 on a usage error, 0 for help, 1 when the server is unreachable", async () => {
    const port = await freePort();
    const [unknown, typo, help, unreachable] = await Promise.all([
      cli(["frobnicate"]),
      cli(["worker"]),
      cli(["wind-down", "--help"]),
      cli(["health", "--url", `http://127.0.0.1:${port}`]),
    ]);
    expect(unknown).toEqual({
      code: 2,
      stdout: "",
      stderr: 'pinboard: unknown command "frobnicate"\nRun "pinboard --help" for usage.\n',
    });
    expect(typo).toEqual({
      code: 2,
      stdout: "",
      stderr: 'pinboard: unknown command "worker"; did you mean `workers`?\nRun "pinboard --help" for usage.\n',
    });
    expect(help).toMatchObject({ code: 0, stderr: "" });
    expect(help.stdout).toMatch(/^usage: pinboard wind-down <namespace> \[id\] --deadline <seconds\|none>/);
    // A bare --help and -h print the overview too (npx passes them on to the CLI).
    for (const flag of ["--help", "-h"]) {
      const bare = await cli([flag], { launcher: true });
      expect(bare).toMatchObject({ code: 0, stderr: "" });
      expect(bare.stdout).toMatch(/^usage: pinboard <command>/);
    }
    expect(unreachable).toEqual({
      code: 1,
      stdout: "",
      stderr:
        `pinboard: cannot reach Pinboard at http://127.0.0.1:${port}: connect ECONNREFUSED 127.0.0.1:${port}\n` +
        `hint: Pinboard is not running at http://127.0.0.1:${port}, or the host, port or URL is wrong: ` +
        "start it (`npm start` listens on http://127.0.0.1:8787 unless PORT or HOST say otherwise) or check --url\n",
    });
  });

  it("checks command lines before any request (in process)", async () => {
    const cases: Array<[string[], Record<string, string>, string]> = [
      [["wind-down", "/threads", "H~1"], {}, "wind-down: --deadline <seconds|none> is required"],
      [
        ["drain", "cli-a", "--deadline", "soon"],
        {},
        '--deadline: expected seconds from 0 to 315360000 or "none", got "soon"',
      ],
      [["drain"], {}, "drain: missing <clientId>"],
      [["undrain", "x", "y"], {}, 'undrain: unexpected argument "y"'],
      [["workers", "--tag", "x"], {}, "workers does not take --tag"],
      [["workers", "--bogus"], {}, "Unknown option '--bogus'"],
      [
        ["stats"],
        { PINBOARD_OPERATOR_TOKEN: "" },
        "no operator credential: pass --token or set PINBOARD_OPERATOR_TOKEN",
      ],
      [["health", "--url", "ftp://x"], {}, '--url: expected an http(s) URL, got "ftp://x"'],
      [["sweep-now", "--url", "http://x"], {}, "sweep-now talks to Redis directly and does not take --url"],
      [
        ["sweep-now"],
        {},
        "sweep-now needs the server's Redis: set REDIS_URL, REDIS_CLUSTER_NODES or UPSTASH_REDIS_REST_URL",
      ],
      [
        ["sweep-now"],
        fleet.t.env,
        "sweep-now needs the server's key to open worker secrets (its _wake and _alarm calls are attested): " +
          "set PINBOARD_PASSPORT_SECRET, or PINBOARD_SECRETS_KEY, as the server has it",
      ],
      [[], {}, "no command given"],
      // A sweeper must match the serving fleet's license (here: other shards).
      [
        ["sweep-now"],
        { ...fleet.t.env, PINBOARD_PASSPORT_SECRET: TEST_PASSPORT_SECRET, PINBOARD_SHARDS: "8" },
        "this configuration is not the serving fleet's (",
      ],
    ];
    for (const [argv, env, message] of cases) {
      let stdout = "";
      let stderr = "";
      const code = await runCli(argv, {
        env: { PINBOARD_OPERATOR_TOKEN: "t", ...env },
        now: () => Date.now(),
        stdout: (text) => (stdout += text),
        stderr: (text) => (stderr += text),
        fetch: () => Promise.reject(new Error("no request expected")),
      });
      expect({ argv, code, stdout }).toEqual({ argv, code: 2, stdout: "" });
      expect(stderr).toContain(message);
    }
  });
});

// Commands that change the fleet, one after another.
describe.sequential("pinboard CLI writes", { timeout: 120_000 }, () => {
  it("drains, times a drain and undrains a client, seen through --json reads and Redis", async () => {
    const drainKey = "pinboard:{global}:drain:cli-b";
    const cordon = await cli(["drain", "cli-b"]);
    expect(cordon).toEqual({
      code: 0,
      stdout: "client cli-b cordoned: no new placements, nothing forced (undrain to revoke)\n",
      stderr: "",
    });
    expect(await fleet.t.redis.client.pttl(drainKey)).toBe(-1);
    const drained = await cliJson<WorkersReply>(["workers"]);
    expect(drained.workers.find((w) => w.sessionId === b)?.draining).toBe(true);

    // A timed drain forces release at now + max(deadline, lease); its key lives 7 days longer.
    expect(await cliJson(["drain", "cli-b", "--deadline", "120"])).toEqual({ drained: true });
    expect(await fleet.t.redis.client.pttl(drainKey)).toBeGreaterThan(7 * 24 * 3600 * 1000 + LEASE_MS - 10_000);

    const undrain = await cli(["undrain", "cli-b"]);
    expect(undrain).toEqual({ code: 0, stdout: "client cli-b undrained\n", stderr: "" });
    expect(await fleet.t.redis.client.exists(drainKey)).toBe(0);
    const [after, again] = await Promise.all([cliJson<WorkersReply>(["workers"]), cliJson(["undrain", "cli-b"])]);
    expect(after.workers.find((w) => w.sessionId === b)?.draining).toBe(false);
    expect(again).toEqual({ revoked: false });
  });

  it("winds down one placement and a whole namespace, and clears the fence", async () => {
    const before = await fleet.t.redis.timeMs();
    const one = await cli(["wind-down", "/threads", "H~2", "--deadline", "900"]);
    expect(one).toEqual({
      code: 0,
      stdout: "wind-down fence set at max(900s, one lease) for H~2 in /threads; owner notified\n",
      stderr: "",
    });
    const after = await fleet.t.redis.timeMs();
    const expiry = Number((await getRow(fleet.t, "/threads", "H~2"))!.expiry);
    expect(expiry).toBeGreaterThanOrEqual(before + 900_000);
    // Stamped while the command ran (a CLI process can take seconds on a loaded runner).
    expect(expiry).toBeLessThanOrEqual(after + 900_000);

    const [table, missing, withEnv] = await Promise.all([
      cli(["overview", "--ns", "/threads", "--prefix", "H~2"]),
      cli(["wind-down", "/threads", "nope", "--deadline", "5"]),
      cli(["wind-down", "/threads", "--deadline", "5", "--env", "prod"]),
    ]);
    const fence = /\n\/threads +H~2 +cli-a +- +in (\d+)s\n$/.exec(table.stdout);
    expect(Number(fence?.[1])).toBeGreaterThan(800);
    expect(Number(fence?.[1])).toBeLessThanOrEqual(900);
    expect(missing).toEqual({ code: 0, stdout: "no placement nope in /threads: nothing queued\n", stderr: "" });
    expect(withEnv).toEqual({ code: 1, stdout: "", stderr: "pinboard: env requires hostname-aware mode (HTTP 400)\n" });

    expect(await cliJson(["wind-down", "/threads", "--deadline", "none"])).toEqual({ queued: 3 });
    for (const id of ["H~1", "H~2", "Z~3"]) expect((await getRow(fleet.t, "/threads", id))!.expiry).toBe("");
  });

  it("sweep-now runs one pass against Redis with the server's configuration and prints the report", async () => {
    // A worker whose lease ended long ago: the pass's GC prunes it.
    const dead = await register(registerBody(worker, { clientId: "cli-dead", namespaces: ["/rooms"] }));
    const record = JSON.parse((await fleet.t.redis.hget("pinboard:{global}:sessions", dead))!);
    await fleet.t.redis.client.hset(
      "pinboard:{global}:sessions",
      dead,
      JSON.stringify({ ...record, expiry: record.expiry - 10 * LEASE_MS }),
    );
    // The GC finds dead sessions through their expiry index.
    await fleet.t.redis.client.zadd("pinboard:{global}:session-expiries", record.expiry - 10 * LEASE_MS, dead);
    const env = {
      ...fleet.t.env,
      PINBOARD_PASSPORT_SECRET: TEST_PASSPORT_SECRET,
      PINBOARD_LEASE_TTL_MS: String(LEASE_MS),
      PINBOARD_URL: "",
      PINBOARD_OPERATOR_TOKEN: "",
    };

    const report = await cliJson<Record<string, unknown>>(["sweep-now"], env);
    expect(report).toMatchObject({ ran: true, sessions: 3, resurrected: 0, durationMs: expect.any(Number) });
    const count = expect.any(Number);
    expect(report.wakes).toEqual({ woken: count, pending: count, failed: count, parked: count, dropped: count });
    expect(report.alarms).toEqual({ fired: count, running: count, stale: count, failed: count });
    expect(await fleet.t.redis.hget("pinboard:{global}:sessions", dead)).toBeNull();

    const table = await cli(["sweep-now"], { env });
    expect(table).toMatchObject({ code: 0, stderr: "" });
    expect(table.stdout).toMatch(
      /^sweep pass done\nredis: +(redis:\/\/127\.0\.0\.1:\d+\/?|Redis Cluster [\d.:,]+)\nlive sessions: +3\npruned mirrors: +\d+\nresurrected: +0\norphans listed: +\d+\nduration: +\d+ms\n\nSTAGE +OUTCOME +COUNT\nwakes +woken +\d+\n/,
    );
    expect(table.stdout).toMatch(/\nalarms +fired +\d+\n/);
  });
});
