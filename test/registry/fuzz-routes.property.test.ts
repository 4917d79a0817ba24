import { request as httpRequest } from "node:http";
import { connect } from "node:net";
import fc from "fast-check";
import type { ExecutionContext } from "hono";
import { SignJWT } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import type { AppDeps } from "../../src/deps/app-deps.ts";
import {
  createWorker,
  type Instance,
  type InstanceContext,
  type PinnedWorker,
  type RequestContext,
} from "../../src/pinned/index.ts";
import type { Listening } from "../../src/pinned/node-server.ts";
import { requestHostname } from "../../src/placement/bindings.ts";
import { probeChallenge } from "../../src/registry/probe.ts";
import { freePort } from "../../src/runtime/node/process/free-port.ts";
import { badCredentials } from "../support/bad-credentials.ts";
import { type ChallengeServer, startChallengeServer } from "../support/challenge-server.ts";
import { type Fleet, startFleet } from "../support/fleet.ts";
import {
  bodyText,
  brokenJsonText,
  contentTypes,
  deepJsonText,
  derivedJsonText,
  headerValue,
  hostileJsonText,
  hostileString,
  mostly,
  POLLUTION_KEYS,
  percentEncode,
  queryString,
} from "../support/hostile-json.ts";
import {
  changedKeys,
  globalHashFields,
  keyspaceDigest,
  namespaceListEntries,
  onlyOrphanedListEntriesDropped,
  onlyRemovals,
} from "../support/keyspace.ts";
import { credential, startTestPinboard, TEST_PASSPORT_SECRET, type TestPinboard } from "../support/pinboard-app.ts";
import { startTestRedis, type TestRedis } from "../support/redis.ts";
import { registerBody, registerOk } from "../support/registration.ts";
import { expectRouteOk } from "../support/route-answers.ts";
import { slowUpload } from "../support/slow-upload.ts";

/**
 * Hostile input against every JSON route, the operator reads and the data plane, on the
 * in-process app over a real Redis with real workers behind it:
 *   - never a 500 and never a hang (each request races a timeout);
 *   - the status is one the spec gives the route, with a JSON {"error"} (text/plain 400 for ids);
 *   - a 200 of a JSON route matches the contract's body for that route (its declared reply),
 *     a relayed 200 the worker's echo;
 *   - a request Pinboard refuses (any non-2xx answer of its own, 4xx and 5xx alike) changes no
 *     Redis key (the whole keyspace before = after), but for the writes the spec itself makes on
 *     a refusal (listed in `judged` and `dataPlaneCheck`);
 *   - the data-plane properties really reach the workers (the forwards they saw are counted);
 *   - Object.prototype and friends are untouched by the end.
 * The fast-check seed is printed; FC_SEED=<n> replays it (every property of the file uses it).
 * Two apps share the Redis under different prefixes: single mode ("pinboard:", with a
 * data-plane passport rule for /secure) and hostname-aware mode ("hpb:").
 */

const TIMEOUT_MS = 10_000;
/** FUZZ_SCALE=10 runs ten times as many cases (on demand; CI keeps the file under a minute). */
const SCALE = Number(process.env.FUZZ_SCALE ?? 1);
const runs = (n: number) => Math.max(1, Math.round(n * SCALE));
/**
 * FC_SEED=n (or the older FUZZ_SEED) replays a printed seed; FUZZ_LOG=error shows the apps' log
 * lines (stacks of 500s). Without one a random seed is drawn and printed before the first run.
 */
const SEED_TEXT = process.env.FC_SEED ?? process.env.FUZZ_SEED;
if (SEED_TEXT !== undefined && !/^-?\d+$/.test(SEED_TEXT))
  throw new Error(`FC_SEED must be an integer, got ${JSON.stringify(SEED_TEXT)}`);
const SEED_VALUE = SEED_TEXT !== undefined ? Number(SEED_TEXT) : (Math.random() * 0x7fffffff) | 0;
const SEED = { seed: SEED_VALUE };
console.log(
  `fuzz-routes: fast-check seed ${SEED_VALUE}${SEED_TEXT !== undefined ? " (from FC_SEED)" : ""}; replay with FC_SEED=${SEED_VALUE}`,
);
const LOG_LEVEL = process.env.FUZZ_LOG ?? "silent";
const LEASE_MS = "3600000"; // no heartbeat or expiry lands inside a snapshot window
/** One lease in whole seconds, rounded up: the longest window a refusal's Retry-After can name. */
const LEASE_S = Math.ceil(Number(LEASE_MS) / 1000);
/** The narrow operator credential's claim (namespaces, hostnames, envs). */
const NARROW_CLAIM = { namespaces: ["/threads"], hostnames: ["fuzz.example"], envs: ["prod"] };
const PLACEHOLDER = /"@@([a-z-]+)@@"/g;

/** Forwards that reached the worker library's FuzzEcho instances (the data-plane properties count them). */
let echoForwards = 0;

/** What reached the worker: enough to see the forward happened. */
class FuzzEcho implements Instance {
  constructor(readonly ctx: InstanceContext) {}
  async fetch(request: Request, ctx: RequestContext): Promise<Response> {
    echoForwards++;
    const bytes = request.body ? (await request.arrayBuffer()).byteLength : 0;
    const inbound: string[] = [];
    request.headers.forEach((_v, k) => {
      if (k.startsWith("pinboard-")) inbound.push(k);
    });
    return Response.json({
      ns: ctx.ns,
      id: ctx.id,
      path: ctx.path,
      method: request.method,
      bytes,
      pinboardHeaders: inbound.sort(),
    });
  }
}

let t: TestRedis, pb: TestPinboard, hb: TestPinboard, cs: ChallengeServer, wl: PinnedWorker, wlListening: Listening;
let closedPort: number;

const sessions = { tester: "", other: "", wl: "", hb: "" };
let freshClients = 0;
const clients = { tester: "fuzz-tester", other: "fuzz-other", hb: "fuzz-hb", hbOther: "fuzz-hb-other" };

interface Tokens {
  worker: string;
  workerAll: string;
  other: string;
  operator: string;
  operatorNarrow: string;
  data: string;
  dataNoScope: string;
  dataOtherNs: string;
  bad: string[];
}
let tokens: Tokens;

const prototypeBaseline = new Map<object, string[]>();
const watched: Array<[string, object]> = [
  ["Object.prototype", Object.prototype],
  ["Array.prototype", Array.prototype],
  ["Function.prototype", Function.prototype],
  ["String.prototype", String.prototype],
];

beforeAll(async () => {
  for (const [, proto] of watched) prototypeBaseline.set(proto, Reflect.ownKeys(proto).map(String).sort());

  t = await startTestRedis();
  const common = {
    PINBOARD_LOG_LEVEL: LOG_LEVEL,
    PINBOARD_LEASE_TTL_MS: LEASE_MS,
    PINBOARD_VERIFY_TIMEOUT_MS: "1000",
    PINBOARD_FORWARD_TIMEOUT_MS: "5000",
  };
  pb = await startTestPinboard(t, {
    ...common,
    PINBOARD_DATA_PLANE_RULES: JSON.stringify({ "/secure": { scopes: ["data:use"] } }),
  });
  hb = await startTestPinboard(t, { ...common, PINBOARD_PREFIX: "hpb:", PINBOARD_HOSTNAME_AWARE: "true" });
  runAsWorkers(pb);
  runAsWorkers(hb);
  for (let b = 0; b < 16; b++) {
    await t.redis.client.set(`pinboard:{${b}}:boot_time`, "0");
    await t.redis.client.set(`hpb:{${b}}:boot_time`, "0");
  }
  cs = await startChallengeServer("fuzz-challenge-secret");
  closedPort = await freePort();

  const csPort = Number(new URL(cs.url).port);
  wl = createWorker({
    pinboardUrl: "http://pinboard.fuzz",
    credential: await credential("pinboard:worker"),
    fetch: ((input: string, init?: RequestInit) => pb.app.request(input, init)) as typeof fetch,
    namespaces: { "/echo": FuzzEcho, "/secure": FuzzEcho },
    maxInstances: 1_000_000,
    secret: "fuzz-worker-library-secret",
    logger: { info: () => {}, warn: () => {}, error: () => {} },
  });
  wlListening = await wl.listen({ port: 0 });
  await wl.start();
  sessions.wl = wl.sessionId!;

  const workerAll = await credential("pinboard:worker");
  sessions.tester = (await registerOk(pb, workerAll, registerBody(cs, { clientId: clients.tester }))).sessionId;
  const other = await credential("pinboard:worker", {}, { sub: "other", account: "other-account" });
  sessions.other = (await registerOk(pb, other, registerBody(cs, { clientId: clients.other }))).sessionId;
  sessions.hb = (
    await registerOk(
      hb,
      workerAll,
      registerBody(cs, {
        clientId: clients.hb,
        namespaces: ["/threads", "/echo"],
        hostname: "fuzz.example",
        env: "prod",
        epoch: 1,
      }),
    )
  ).sessionId;
  await registerOk(
    hb,
    other,
    registerBody(cs, {
      clientId: clients.hbOther,
      namespaces: ["/threads"],
      hostname: "other.example",
      env: "prod",
      epoch: 1,
    }),
  );

  const ports = [csPort, wlListening.port, closedPort];
  tokens = {
    worker: await credential("pinboard:worker", { allowedBackendHosts: ["127.0.0.1"], allowedPorts: ports }),
    workerAll,
    other,
    operator: await credential("pinboard:operator"),
    operatorNarrow: await credential("pinboard:operator", NARROW_CLAIM),
    data: await dataToken(["data:use"]),
    dataNoScope: await dataToken(["other:scope"]),
    dataOtherNs: await dataToken(["data:use"], { namespaces: ["/echo"], allowedBackendHosts: ["*"] }),
    bad: (await badCredentials(["pinboard:worker", "pinboard:operator", "data:use"])).map((b) => b.token),
  };
}, 60_000);

afterAll(async () => {
  await wl?.stop().catch(() => {});
  await wlListening?.close();
  await cs?.close();
  await pb?.close();
  await hb?.close();
  await t?.stop();
});

/** A data-plane credential (Passport's key, no pinboard:* scope needed). */
function dataToken(scopes: string[], pinboard?: Record<string, unknown>): Promise<string> {
  return new SignJWT({ scopes, ...(pinboard ? { pinboard } : {}) })
    .setProtectedHeader({ alg: "HS256" })
    .setSubject("data-client")
    .setIssuedAt()
    .setExpirationTime("1h")
    .sign(new TextEncoder().encode(TEST_PASSPORT_SECRET));
}

// ---------------------------------------------------------------------------------------------
// Sending and judging one request

/** FUZZ_STATS=1 prints how often each route answered each status and error (is the fuzz reaching deep?). */
const stats = new Map<string, number>();
function tally(route: string, o: Outcome): void {
  if (!process.env.FUZZ_STATS) return;
  const route0 =
    route.startsWith("POST /registry") || route.startsWith("GET /registry")
      ? route
      : `${route.split(" ")[0]} ${(route.split(" ")[1] ?? "").split("/").slice(0, 2).join("/")}`;
  let error = "";
  try {
    error = (JSON.parse(o.text) as { error?: string }).error ?? "";
  } catch {
    error = o.text.slice(0, 30);
  }
  const key = `${route0} ${o.status} ${error.slice(0, 50)}`;
  stats.set(key, (stats.get(key) ?? 0) + 1);
}
afterAll(() => {
  console.log(
    `fuzz-routes: ${refusalsJudged.count} refusal(s) checked against the whole keyspace, by status ${JSON.stringify(Object.fromEntries([...refusalsJudged.by].sort()))}`,
  );
  if (process.env.FUZZ_STATS)
    console.log(
      [...stats]
        .sort()
        .map(([k, n]) => `${String(n).padStart(5)} ${k}`)
        .join("\n"),
    );
});

interface Outcome {
  status: number;
  headers: Headers;
  text: string;
}

/**
 * The fuzzed apps run as on the Workers entry (the same createPinboard app, its fetch transport): work a
 * request leaves behind (outlier counts, marker clears, the spend sync's flush) goes to the
 * execution context's waitUntil, and `exchange` awaits it before answering. So the keyspace
 * after a request is final, and the next request's before-and-after comparison sees only what
 * that request did: no sleep decides it.
 */
function runAsWorkers(app: TestPinboard): void {
  (app.deps as { runtime: AppDeps["runtime"] }).runtime = {
    ...app.deps.runtime,
    label: "workers",
    backgroundWork: "request-bound",
  };
}

async function exchange(app: TestPinboard, path: string, init: RequestInit): Promise<Outcome> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const hang = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`hang: ${init.method ?? "GET"} ${path.slice(0, 200)} got no answer in ${TIMEOUT_MS} ms`)),
      TIMEOUT_MS,
    );
  });
  const deferred: Promise<unknown>[] = [];
  const executionCtx = {
    waitUntil: (work: Promise<unknown>) => void deferred.push(work),
    passThroughOnException: () => {},
    props: {},
  };
  try {
    return await Promise.race([
      (async () => {
        const res = await app.app.request(path, init, undefined, executionCtx satisfies ExecutionContext);
        const outcome = { status: res.status, headers: res.headers, text: await res.text() };
        // Deferred work may defer more (a flush after a flush): settle until nothing is left.
        for (let settled = 0; settled < deferred.length; ) {
          const batch = deferred.slice(settled);
          settled = deferred.length;
          await Promise.allSettled(batch);
        }
        return outcome;
      })(),
      hang,
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** Pinboard's own error answer: JSON {"error": string}, never the internal error. */
function expectJsonError(o: Outcome, context: string): void {
  expect(o.headers.get("content-type"), context).toMatch(/^application\/json/);
  let body: unknown;
  expect(() => (body = JSON.parse(o.text)), `${context}: body ${o.text.slice(0, 200)}`).not.toThrow();
  expect(typeof (body as { error?: unknown }).error, `${context}: ${o.text.slice(0, 200)}`).toBe("string");
  expect((body as { error: string }).error).not.toBe("internal error");
}

function expectJsonOk(o: Outcome, context: string): void {
  expect(o.headers.get("content-type"), context).toMatch(/^application\/json/);
  const body = JSON.parse(o.text) as unknown;
  expect(typeof body === "object" && body !== null && !Array.isArray(body), context).toBe(true);
}

const REFUSALS = new Set([
  "no live backends for namespace",
  "registry cold start, retry",
  "not the serving fleet",
  "no live workers for hostname",
  "hostname binding displaced, retry",
  "hostname bindings inconsistent, retry",
  "takeover in progress, retry",
  "placement held by another hostname",
  "worker inflight cap exceeded, retry",
  "worker refused activation, retry",
]);

/** A non-2xx answer. */
const refused = (o: Outcome) => o.status < 200 || o.status >= 300;
/** Refusals counted per property: each must have been checked against the keyspace. */
const refusalsJudged = { count: 0, by: new Map<number, number>() };

/**
 * Runs `send` and, when Pinboard refused it (any non-2xx answer of its own, 4xx or 5xx), proves
 * the keyspace unchanged. Exceptions, each from the spec:
 *   - register prunes dead sessions and bindings without a live worker ("by the next register")
 *     before it judges conflicts, so a register 409 may remove fields of the fleet-wide hashes,
 *     and nothing else;
 *   - `specWrites` names the keys a particular refusal writes by contract (the takeover fence);
 *   - a resolve drops from a namespace list the entries of sessions whose mirror in the bucket is
 *     gone (left by a session that re-registered with other namespaces), whatever it answers:
 *     a list that only lost such entries is that repair.
 * On a difference, the changed keys are shown as TestRedis.snapshot() renders them.
 */
async function judged(
  send: () => Promise<Outcome>,
  isOwnRefusal: (o: Outcome) => boolean,
  context: () => string,
  registerPrune = false,
  specWrites?: (o: Outcome, key: string) => boolean,
): Promise<Outcome> {
  const before = await keyspaceDigest(t);
  const listsBefore = await namespaceListEntries(t);
  const fieldsBefore = registerPrune ? await globalHashFields(t) : undefined;
  const o = await send();
  tally(context().split(" ").slice(0, 2).join(" ").replace(/\?.*/, "").slice(0, 40), o);
  if (isOwnRefusal(o)) {
    refusalsJudged.count++;
    refusalsJudged.by.set(o.status, (refusalsJudged.by.get(o.status) ?? 0) + 1);
    let changed = changedKeys(before, await keyspaceDigest(t));
    const listsAfter = await namespaceListEntries(t);
    const repaired = await Promise.all(
      changed.map((k) => onlyOrphanedListEntriesDropped(t, k, listsBefore, listsAfter)),
    );
    changed = changed.filter((_, i) => !repaired[i]);
    if (fieldsBefore && o.status === 409 && changed.every((k) => k.includes("{global}:"))) {
      if (onlyRemovals(fieldsBefore, await globalHashFields(t))) changed = [];
    }
    if (specWrites) changed = changed.filter((k) => !specWrites(o, k));
    if (changed.length) {
      const now = await t.snapshot();
      const shown = Object.fromEntries(changed.map((k) => [k, now[k] ?? "(deleted)"]));
      expect.fail(
        `${context()} → ${o.status} ${o.text.slice(0, 120)} changed Redis: ${JSON.stringify(shown).slice(0, 1500)}`,
      );
    }
  }
  return o;
}

/** Replaces "@@name@@" placeholders (JSON strings) with live values: sessions, URLs, rows, challenges. */
async function fill(text: string, pick: number): Promise<string> {
  if (!text.includes("@@")) return text;
  let pair: [string, string] | undefined;
  const row = text.includes("@@row-") ? await someRow(pick) : undefined;
  return text.replace(PLACEHOLDER, (_m, name: string) => {
    const value = ((): string | number => {
      switch (name) {
        case "sid-tester":
          return sessions.tester;
        case "sid-other":
          return sessions.other;
        case "sid-wl":
          return sessions.wl;
        case "sid-hb":
          return sessions.hb;
        case "client-tester":
          return clients.tester;
        case "client-other":
          return clients.other;
        case "client-wl":
          return wl.clientId;
        case "client-hb":
          return clients.hb;
        case "client-hb-other":
          return clients.hbOther;
        case "client-fresh":
          return `fuzz-client-${++freshClients}`;
        case "client-reused":
          return `fuzz-reused-${pick % 3}`;
        case "cs-url":
          return cs.url;
        case "wl-url":
          return wlListening.url;
        case "closed-url":
          return `http://127.0.0.1:${closedPort}`;
        case "cs-secret":
          return cs.secret;
        case "challenge":
        case "challenge-value": {
          pair ??= [`fz-${Math.random().toString(36).slice(2)}`, `fzv-${Math.random().toString(36).slice(2)}`];
          cs.challenges.set(pair[0], pair[1]);
          return name === "challenge" ? pair[0] : pair[1];
        }
        case "row-ns":
          return row?.ns ?? "/echo";
        case "row-id":
          return row?.id ?? "no-row";
        case "row-epoch":
          return row?.epoch ?? "1";
        case "row-sid":
          return row?.sessionId ?? sessions.wl;
        default:
          return `@@${name}@@`;
      }
    })();
    return JSON.stringify(value);
  });
}

async function someRow(
  pick: number,
): Promise<{ ns: string; id: string; epoch: string; sessionId: string } | undefined> {
  const keys = (await t.keys("pinboard:*:placements")).sort();
  const rows: Array<{ ns: string; id: string; epoch: string; sessionId: string }> = [];
  for (const key of keys) {
    const ns = key.split(":").at(-2)!;
    for (const [id, value] of Object.entries(await t.redis.client.hgetall(key))) {
      const [sessionId = "", epoch = ""] = value.split("\n");
      rows.push({ ns, id, epoch, sessionId });
    }
  }
  return rows.length ? rows[pick % rows.length] : undefined;
}

/**
 * After a run: put back what a successful deregister or a voided heartbeat took away (the
 * tester's own session), so later runs keep reaching the code behind the session checks.
 */
async function repair(): Promise<void> {
  const alive = await t.redis.client.hexists("pinboard:{global}:sessions", sessions.tester);
  if (!alive)
    sessions.tester = (
      await registerOk(pb, tokens.workerAll, registerBody(cs, { clientId: clients.tester }))
    ).sessionId;
}

// ---------------------------------------------------------------------------------------------
// Valid bodies (JSON text per field) that the mutations start from

const str = (s: string) => JSON.stringify(s);
const ph = (name: string) => str(`@@${name}@@`);

const sessionRef = mostly(
  [ph("sid-tester"), ph("sid-wl"), ph("row-sid")],
  [ph("sid-other"), str("no-such-session"), str(""), str("s".repeat(257))],
);
const nsRef = mostly(
  [str("/threads"), str("/echo"), ph("row-ns")],
  [str("/secure"), str("/nope"), str("threads"), str("/a/b"), str("/"), str("/__proto__")],
);
const idRef = fc.oneof(
  { weight: 5, arbitrary: fc.constantFrom(ph("row-id"), ph("row-id"), str("hot-1"), str("a".repeat(256))) },
  { weight: 2, arbitrary: fc.stringMatching(/^[A-Za-z0-9._~-]{1,20}$/).map(str) },
  { weight: 1, arbitrary: fc.constantFrom(str("a".repeat(257)), str(""), str("a b"), str("__proto__")) },
);
const epochRef = fc.oneof(
  { weight: 5, arbitrary: fc.constant(ph("row-epoch")) },
  { weight: 2, arbitrary: fc.bigInt({ min: 0n, max: 10n ** 20n }).map((n) => str(String(n))) },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      str(""),
      str("0"),
      str("9".repeat(32)),
      str("1".repeat(33)),
      str("-1"),
      str("1e3"),
      str(" 1"),
      str("١"),
    ),
  },
);
const urlRef = mostly(
  [ph("cs-url"), ph("cs-url"), ph("cs-url"), ph("wl-url"), ph("closed-url")],
  [
    str("http://localhost:1"),
    str("http://10.0.0.1"),
    str("http://[::1]:1"),
    str("http://u:p@127.0.0.1:1"),
    str("ftp://127.0.0.1"),
    str("http://127.0.0.1:1/?q#f"),
    str("http://0x7f000001:1"),
    str("http://127.1:1"),
    str("javascript:alert(1)"),
    str("http://127.0.0.1:99999"),
    str("//127.0.0.1"),
    str("http://127.0.0.1"),
    str("http://127.0.0.1.nip.io:1"),
  ],
);
const nsListRef = fc.oneof(
  { weight: 5, arbitrary: fc.constantFrom('["/threads"]', '["/threads","/fuzz"]', '["/fuzz","/fuzz"]') },
  {
    weight: 1,
    arbitrary: fc
      .array(
        fc.constantFrom(
          "/threads",
          "/echo",
          "/fuzz",
          "*",
          "/",
          "/a/b",
          "threads",
          "/__proto__",
          "/constructor",
          "/registry",
          "/_pinned",
          "/metrics",
          "/healthz",
        ),
        { maxLength: 4 },
      )
      .map((xs) => JSON.stringify(xs)),
  },
);
const seconds = mostly(
  ["null", "0", "1", "60"],
  ["-1", "0.5", "315360000", "315360001", "1e999", '"10"', "-0", "1e-999"],
);

const registerFields = (hostnameAware: boolean) =>
  fc.record(
    {
      // Fresh client ids, ids reused across runs (a re-register of a client, often with another
      // namespace set: its old session's entries in the dropped namespaces' lists must trip no
      // placement, fixed with "resolve skips candidates without a record", see the regressions
      // below), the tester's own id (repair() registers it again when replaced), and another
      // account's (the 409).
      clientId: mostly(
        [ph("client-fresh"), ph("client-reused"), ph("client-reused"), ph("client-tester")],
        [hostnameAware ? ph("client-hb-other") : ph("client-other"), str(""), str("c".repeat(257))],
      ),
      // "wrong-secret" is under 16 characters (a field rule's 400); the long one reaches the probe.
      secret: mostly(
        [ph("cs-secret")],
        [str("wrong-secret"), str("wrong-secret-but-long-enough"), str("s".repeat(15)), str("")],
      ),
      namespaces: nsListRef,
      advertiseUrl: urlRef,
      headroom: mostly(["10", "0", "0.5", "1e300"], ["-1", "1e999", '"5"', "-0", "1e308"]),
      draining: mostly(["false", "true"], ["0", '"false"', "null"]),
      challenge: mostly([ph("challenge")], [str("stale"), str("")]),
      challengeValue: mostly([ph("challenge-value")], [str("wrong")]),
      ...(hostnameAware
        ? {
            hostname: mostly(
              [str("fuzz.example"), str("FUZZ.example"), str("other.example")],
              [str("a b"), str("*"), str("a:b"), str(""), str("a/b"), str("h".repeat(254))],
            ),
            env: mostly([str("prod"), str("staging"), str("PROD")], [str("a/b"), "null", str("*"), str("")]),
            envs: mostly(
              ['{"/threads":"prod"}', "{}"],
              ['{"/nope":"prod"}', '{"__proto__":"prod"}', '{"/threads":"*"}', '{"constructor":"x"}'],
            ),
            takeover: mostly([str("wind_down"), str("deny"), "null"], [str("steal"), str("")]),
            epoch: mostly(["1", "2", "3", "4", "5"], ["0", "-1", "1.5", "9007199254740992", "1e999", '"2"']),
          }
        : {}),
      instances: mostly(
        ['{"/threads":["a","b"]}', '{"/threads":[]}', "null"],
        [
          '{"/echo":["hot-1","a b"]}',
          '{"__proto__":["x"]}',
          '{"/nope":["x"]}',
          '{"/threads":["__proto__","constructor"]}',
        ],
      ),
      prevSessionId: mostly(
        [ph("sid-tester"), "null"],
        [ph("sid-wl"), ph("sid-other"), ph("row-sid"), str("no-such-session"), str(""), str("p".repeat(257))],
      ),
    },
    {
      requiredKeys: [
        "clientId",
        "secret",
        "namespaces",
        "advertiseUrl",
        "headroom",
        "draining",
        "challenge",
        "challengeValue",
      ],
    },
  ) as fc.Arbitrary<Record<string, string>>;

const heartbeatFields = fc.record(
  {
    sessionId: mostly([ph("sid-tester"), ph("sid-hb")], [ph("sid-other"), str("no-such-session"), str("")]),
    headroom: mostly(["10", "0", "-0", "1.5", "1e300"], ["-1", "1e999", '"1"']),
    draining: mostly(["false", "true"], ["null", "1"]),
    challenge: mostly([ph("challenge")], [str("stale")]),
    challengeValue: mostly([ph("challenge-value")], [str("wrong")]),
    acks: mostly(
      ["[]", '["1-0"]', "[1, 2]"],
      ["[-1]", "[1e300]", "[9007199254740993]", `[${'"x",'.repeat(50)}"x"]`, `["${"9".repeat(40)}"]`, "[null]"],
    ),
  },
  { requiredKeys: ["sessionId", "headroom", "draining", "challenge", "challengeValue"] },
) as fc.Arbitrary<Record<string, string>>;

const rowFields = fc.record(
  { sessionId: sessionRef, namespace: nsRef, id: idRef, epoch: epochRef },
  { requiredKeys: ["sessionId", "namespace", "id"] },
) as fc.Arbitrary<Record<string, string>>;
const tagFields = fc.record({
  sessionId: sessionRef,
  namespace: nsRef,
  id: idRef,
  epoch: epochRef,
  tag: fc.oneof(
    { weight: 3, arbitrary: fc.constantFrom(str("ws:W"), str("t".repeat(256)), str("H~")) },
    { weight: 2, arbitrary: hostileString.map(str) },
    { weight: 1, arbitrary: fc.constantFrom(str("t".repeat(257)), str("")) },
  ),
}) as fc.Arbitrary<Record<string, string>>;
const deregisterFields = fc.record({
  sessionId: mostly([ph("sid-tester")], [ph("sid-other"), ph("sid-hb"), str("no-such-session"), str("x".repeat(257))]),
});

/** Release takes an array of row items; the mutations work on one item, the rest stay valid. */
const rowObject = rowFields.map(
  (f) =>
    `{${Object.entries(f)
      .map(([k, v]) => `${str(k)}:${v}`)
      .join(",")}}`,
);
const releaseText = fc.oneof(
  {
    weight: 3,
    arbitrary: fc
      .tuple(bodyText(rowFields), fc.array(rowObject, { maxLength: 3 }))
      .map(([first, rest]) => `[${[first, ...rest].join(",")}]`),
  },
  { weight: 1, arbitrary: bodyText(rowFields) },
  { weight: 1, arbitrary: fc.constantFrom("[]", "[null]", "[[]]", `[${"{},".repeat(20)}{}]`) },
);

const windDownFields = fc.record(
  {
    namespace: nsRef,
    id: fc.oneof(idRef, fc.constant("null")),
    deadline: seconds,
    env: mostly(["null"], [str("prod"), str(""), str("*")]),
  },
  { requiredKeys: ["namespace", "deadline"] },
) as fc.Arbitrary<Record<string, string>>;
const drainFields = fc.record({
  clientId: mostly([ph("client-tester"), ph("client-other")], [str("nobody"), str(""), str("c".repeat(257))]),
  deadline: seconds,
});
const undrainFields = fc.record({
  clientId: mostly([ph("client-tester"), ph("client-other"), ph("client-wl")], [str("nobody"), str("")]),
});

// ---------------------------------------------------------------------------------------------
// Headers

const contentLength = fc.constantFrom<"actual" | "omit" | "less" | "more" | "junk" | "huge" | "negative">(
  "actual",
  "omit",
  "omit",
  "less",
  "more",
  "junk",
  "huge",
  "negative",
);

function buildHeaders(
  token: string | undefined,
  contentType: string | undefined,
  length: string,
  body: string | undefined,
  extra: Array<[string, string]>,
): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, value] of extra) headers[name] = value;
  if (token !== undefined) headers.authorization = token === "" ? "" : `Bearer ${token}`;
  if (contentType !== undefined) headers["content-type"] = contentType;
  const bytes = body === undefined ? 0 : new TextEncoder().encode(body).byteLength;
  const declared = {
    actual: String(bytes),
    omit: undefined,
    less: String(Math.max(0, bytes - 3)),
    more: String(bytes + 7),
    junk: "abc",
    huge: "99999999999999999999",
    negative: "-5",
  }[length];
  if (declared !== undefined) headers["content-length"] = declared;
  return headers;
}

const extraHeaders = fc.array(
  fc.tuple(
    fc.constantFrom(
      "x-forwarded-for",
      "pinboard-epoch",
      "pinboard-attestation",
      "pinboard-session",
      "transfer-encoding",
      "content-encoding",
      "x-unknown",
      "accept",
      "cf-connecting-ip",
      "__proto__",
    ),
    headerValue,
  ),
  { maxLength: 3 },
);

function tokenFor(kind: string): string | undefined {
  switch (kind) {
    case "worker":
      return tokens.worker;
    case "other":
      return tokens.other;
    case "operator":
      return tokens.operator;
    case "operator-narrow":
      return tokens.operatorNarrow;
    case "none":
      return undefined;
    case "empty":
      return "";
    case "garbage":
      return "not.a.jwt";
    default:
      return tokens.bad[Number(kind.slice(4)) % tokens.bad.length];
  }
}

const badTokenKind = fc.nat(10).map((n) => `bad-${n}`);

// ---------------------------------------------------------------------------------------------

const WORKER_ROUTE_STATUSES: Record<string, number[]> = {
  "/registry/register": [200, 400, 401, 403, 409, 413],
  "/registry/heartbeat": [200, 400, 401, 403, 409, 413],
  "/registry/release": [200, 400, 401, 403, 409, 413],
  "/registry/tag": [200, 400, 401, 403, 409, 413],
  "/registry/deregister": [200, 400, 401, 403, 409, 413],
  "/registry/wind_down": [200, 400, 401, 403, 413],
  "/registry/drain": [200, 400, 401, 403, 413],
  "/registry/undrain": [200, 400, 401, 403, 413],
};

async function postRoute(
  app: TestPinboard,
  route: string,
  body: string,
  tokenKind: string,
  contentType: string | undefined,
  length: string,
  extra: Array<[string, string]>,
  pick: number,
): Promise<void> {
  const filled = await fill(body, pick);
  const headers = buildHeaders(tokenFor(tokenKind), contentType, length, filled, extra);
  const context = () => `POST ${route} [${tokenKind}] ${JSON.stringify(headers).slice(0, 300)} ${filled.slice(0, 300)}`;
  // Drain and undrain: the one answer the contract gives this request, judged before it is sent.
  const exact = DRAIN_ROUTES.has(route) ? await drainAnswer(app, route, tokenKind, headers, filled) : undefined;
  const o = await judged(
    () => exchange(app, route, { method: "POST", headers, body: filled }),
    // A heartbeat's 409 voided/superseded drops the records by design; every other refusal changes nothing.
    (r) => refused(r) && !/^\{"error":"registration (voided|superseded)/.test(r.text),
    context,
    route === "/registry/register",
  );
  expect(WORKER_ROUTE_STATUSES[route], `${context()} → ${o.status} ${o.text.slice(0, 200)}`).toContain(o.status);
  if (exact) {
    let answered: unknown = o.text;
    try {
      answered = JSON.parse(o.text);
    } catch {}
    expect({ status: o.status, body: answered }, `${context()} → ${o.status} ${o.text.slice(0, 200)}`).toEqual(exact);
  }
  if (o.status === 200) {
    expectJsonOk(o, context());
    expectRouteOk(`POST ${route}`, o.text, context());
  } else expectJsonError(o, context());
  await repair();
}

const DRAIN_ROUTES = new Set(["/registry/drain", "/registry/undrain"]);
const DRAIN_SECONDS_MAX = 10 * 365 * 24 * 3600;

/**
 * What POST /registry/drain or /registry/undrain must answer, status and body, from the request
 * and the Redis state before it is sent (single mode), in the order Pinboard judges:
 *   1. the credential: none or a refused one is 401 unauthorized, one without pinboard:operator
 *      403 forbidden;
 *   2. the body: over 1 MiB (declared in Content-Length or sent) 413 body too large; not JSON,
 *      or a string (key or value) holding a lone surrogate, 400 invalid json; outside the schema
 *      ({clientId: 1–256 characters, deadline: seconds 0–10 years or null}) 400 expected {…};
 *   3. the client: unknown (no owner, or no record behind it) or a registration the credential's
 *      namespaces do not wholly cover, 403 forbidden;
 *   4. 200 {"drained":true}, or {"revoked": whether the client had a drain}.
 * Content-Type is not judged; the body is sent as UTF-8 and read back as Pinboard reads it.
 */
async function drainAnswer(
  app: TestPinboard,
  route: string,
  tokenKind: string,
  headers: Record<string, string>,
  body: string,
): Promise<{ status: number; body: unknown }> {
  const refuse = (status: number, error: string) => ({ status, body: { error } });
  if (tokenKind === "worker" || tokenKind === "other") return refuse(403, "forbidden");
  if (tokenKind !== "operator" && tokenKind !== "operator-narrow") return refuse(401, "unauthorized");

  const bytes = new TextEncoder().encode(body);
  const declared = headers["content-length"];
  if ((declared !== undefined && Number(declared) > MiB) || bytes.byteLength > MiB)
    return refuse(413, "body too large");
  let value: unknown;
  try {
    value = JSON.parse(new TextDecoder().decode(bytes));
  } catch {
    return refuse(400, "invalid json");
  }
  if (!everyStringWellFormed(value)) return refuse(400, "invalid json");

  const drain = route === "/registry/drain";
  const isObject = typeof value === "object" && value !== null && !Array.isArray(value);
  const { clientId, deadline } = (isObject ? value : {}) as Record<string, unknown>;
  const validClient = typeof clientId === "string" && clientId.length >= 1 && clientId.length <= 256;
  const validDeadline =
    deadline === null ||
    (typeof deadline === "number" && Number.isFinite(deadline) && deadline >= 0 && deadline <= DRAIN_SECONDS_MAX);
  if (!validClient || (drain && !validDeadline)) {
    return refuse(400, drain ? "expected {clientId: string, deadline: number | null}" : "expected {clientId: string}");
  }

  const { keys } = app.deps;
  const owner = await t.redis.hget(keys.clientOwners, clientId);
  const json = owner === null ? null : await t.redis.hget(keys.sessions, owner.slice(owner.indexOf("\n") + 1));
  const namespaces = json === null ? null : (JSON.parse(json) as { namespaces: string[] }).namespaces;
  const covered =
    namespaces !== null && (tokenKind === "operator" || namespaces.every((ns) => NARROW_CLAIM.namespaces.includes(ns)));
  if (!covered) return refuse(403, "forbidden");
  if (drain) return { status: 200, body: { drained: true } };
  return { status: 200, body: { revoked: (await t.redis.client.exists(keys.drain(clientId))) === 1 } };
}

const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** Every string of a parsed JSON value, keys included, is well-formed UTF-16 (iterative: bodies nest deep). */
function everyStringWellFormed(value: unknown): boolean {
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const item = stack.pop();
    if (typeof item === "string") {
      if (LONE_SURROGATE.test(item)) return false;
    } else if (item !== null && typeof item === "object") {
      for (const [key, element] of Object.entries(item)) {
        if (LONE_SURROGATE.test(key)) return false;
        stack.push(element);
      }
    }
  }
  return true;
}

/** Posts arbitrary bodies to the drawn routes with the drawn tokens and headers, `numRuns` times. */
async function fuzzPosts(
  route: fc.Arbitrary<[string, string]>,
  tokenKind: fc.Arbitrary<string>,
  numRuns: number,
): Promise<void> {
  await fc.assert(
    fc.asyncProperty(
      route,
      tokenKind,
      contentTypes,
      contentLength,
      extraHeaders,
      fc.nat(),
      async ([path, body], kind, type, length, extra, pick) => {
        await postRoute(pb, path, body, kind, type, length, extra, pick);
      },
    ),
    { numRuns: runs(numRuns), ...SEED },
  );
}

describe("fuzzing the JSON routes (in-process app, real Redis)", () => {
  it("worker routes: register, heartbeat, release, tag, deregister", { timeout: 120_000 * SCALE }, async () => {
    const route = fc.oneof(
      fc.tuple(fc.constant("/registry/register"), bodyText(registerFields(false))),
      fc.tuple(fc.constant("/registry/heartbeat"), bodyText(heartbeatFields)),
      fc.tuple(fc.constant("/registry/release"), releaseText),
      fc.tuple(fc.constant("/registry/tag"), bodyText(tagFields)),
      fc.tuple(fc.constant("/registry/deregister"), bodyText(deregisterFields)),
    );
    const tokenKind = fc.oneof(
      { weight: 8, arbitrary: fc.constant("worker") },
      { weight: 1, arbitrary: fc.constantFrom("other", "operator", "none", "empty", "garbage") },
      { weight: 1, arbitrary: badTokenKind },
    );
    await fuzzPosts(route, tokenKind, 220);
  });

  it("operator routes: wind_down, drain, undrain", { timeout: 120_000 * SCALE }, async () => {
    const route = fc.oneof(
      fc.tuple(fc.constant("/registry/wind_down"), bodyText(windDownFields)),
      fc.tuple(fc.constant("/registry/drain"), bodyText(drainFields)),
      fc.tuple(fc.constant("/registry/undrain"), bodyText(undrainFields)),
    );
    const tokenKind = fc.oneof(
      { weight: 6, arbitrary: fc.constantFrom("operator", "operator-narrow") },
      { weight: 1, arbitrary: fc.constantFrom("worker", "none", "garbage") },
      { weight: 1, arbitrary: badTokenKind },
    );
    await fuzzPosts(route, tokenKind, 100);
  });

  it("GET operator routes with arbitrary query strings, and unknown /registry paths", {
    timeout: 60_000 * SCALE,
  }, async () => {
    const target = fc.oneof(
      {
        weight: 6,
        arbitrary: fc.tuple(
          fc.constantFrom("/registry/overview", "/registry/workers", "/registry/health", "/registry/stats"),
          queryString,
        ),
      },
      {
        weight: 1,
        arbitrary: fc.tuple(
          fc.oneof(
            fc.constantFrom(
              "/registry",
              "/registry/",
              "/registry/unknown",
              "/registry/overview/x",
              "/registry/%2e%2e/registry/workers",
              "/registry/__proto__",
              "/registry/constructor",
              "/registry/register/",
            ),
            hostileString.map((s) => `/registry/${percentEncode(s, /[A-Za-z0-9._~-]/)}`),
          ),
          queryString,
        ),
      },
    );
    const method = fc.constantFrom("GET", "GET", "GET", "POST", "PUT", "DELETE", "PATCH", "OPTIONS");
    const tokenKind = fc.oneof(
      { weight: 6, arbitrary: fc.constantFrom("operator", "operator-narrow") },
      { weight: 1, arbitrary: fc.constantFrom("worker", "none", "garbage") },
      { weight: 1, arbitrary: badTokenKind },
    );
    await fc.assert(
      fc.asyncProperty(target, method, tokenKind, extraHeaders, async ([path, query], verb, kind, extra) => {
        const headers = buildHeaders(tokenFor(kind), undefined, "omit", undefined, extra);
        const url = `${path}${query ? `?${query}` : ""}`;
        const context = () => `${verb} ${url} [${kind}]`;
        const init: RequestInit = { method: verb, headers, ...(verb === "GET" ? {} : { body: "{}" }) };
        const o = await judged(() => exchange(pb, url, init), refused, context);
        const known = ["/registry/overview", "/registry/workers", "/registry/health", "/registry/stats"];
        const pathname = new URL(`http://x${url}`).pathname;
        const allowed = known.includes(pathname) ? [200, 400, 401, 403, 404] : [401, 403, 404];
        expect(allowed, `${context()} → ${o.status} ${o.text.slice(0, 200)}`).toContain(o.status);
        if (o.status === 200) {
          expectJsonOk(o, context());
          expectRouteOk(`${verb} ${pathname}`, o.text, context());
        } else expectJsonError(o, context());
        if (o.status === 400) expect(JSON.parse(o.text).error, context()).toMatch(/^(invalid namespace|empty tag)$/);
      }),
      { numRuns: runs(120), ...SEED },
    );
  });

  it("data plane: random namespaces, ids, rests, queries, epochs, caller attestation and passport headers", {
    timeout: 120_000 * SCALE,
  }, async () => {
    await reachingWorkers(
      "data plane",
      () =>
        fc.assert(
          fc.asyncProperty(dataPlaneRequest(false), async (req) => dataPlaneCheck(pb, req)),
          { numRuns: runs(220), ...SEED },
        ),
      { someOk: true },
    );
  });

  it("hostname-aware mode: register fields, Host headers and the data plane", {
    timeout: 120_000 * SCALE,
  }, async () => {
    const tokenKind = fc.oneof({ weight: 8, arbitrary: fc.constant("worker") }, { weight: 1, arbitrary: badTokenKind });
    await fc.assert(
      fc.asyncProperty(
        bodyText(registerFields(true)),
        tokenKind,
        contentTypes,
        fc.nat(),
        async (body, kind, type, pick) => {
          await postRoute(hb, "/registry/register", body, kind, type, "omit", [], pick);
        },
      ),
      { numRuns: runs(60), ...SEED },
    );
    await reachingWorkers(
      "hostname-aware data plane",
      () =>
        fc.assert(
          fc.asyncProperty(dataPlaneRequest(true), async (req) => dataPlaneCheck(hb, req)),
          { numRuns: runs(80), ...SEED },
        ),
      // Its sessions live on the challenge server, which answers a forward 404: reached, not served.
      { someOk: false },
    );
  });

  it("leaves Object.prototype, Array.prototype, Function.prototype and String.prototype as they were", () => {
    for (const [name, proto] of watched)
      expect(Reflect.ownKeys(proto).map(String).sort(), name).toEqual(prototypeBaseline.get(proto));
    const probe = {} as Record<string, unknown>;
    for (const key of POLLUTION_KEYS.filter((k) => !(k in Object.prototype))) expect(probe[key], key).toBeUndefined();
    expect(Object.getPrototypeOf(probe)).toBe(Object.prototype);
  });
});

// ---------------------------------------------------------------------------------------------
// The data plane

interface DataPlaneRequest {
  method: string;
  path: string;
  headers: Array<[string, string]>;
  body?: string;
  auth: string;
  caller: { from: string; session: string; secret: string; depth?: string } | null;
}

const DATA_NS = ["/echo", "/secure", "/threads", "/nope", "/registry", "/__proto__", "/-", "/~"];
const HOT_IDS = ["hot-1", "hot-2", "hot-3", "a.b", "~", "-", "_"];

function dataPlaneRequest(hostnameAware: boolean): fc.Arbitrary<DataPlaneRequest> {
  const ns = fc.oneof(
    { weight: 5, arbitrary: fc.constantFrom(...DATA_NS) },
    { weight: 1, arbitrary: hostileString.map((s) => `/${percentEncode(s, /[A-Za-z0-9._~-]/)}`) },
    { weight: 1, arbitrary: fc.constantFrom("", "/", "//", "/echo/", "/%2F") },
  );
  const id = fc.oneof(
    { weight: 4, arbitrary: fc.constantFrom(...HOT_IDS) },
    { weight: 2, arbitrary: fc.stringMatching(/^[A-Za-z0-9._~-]{1,24}$/) },
    {
      weight: 1,
      arbitrary: fc.constantFrom(
        "",
        "a".repeat(256),
        "a".repeat(257),
        "a%20b",
        "%E0%A4%A",
        "a*b",
        "..",
        "%2e%2e",
        "x%00",
        "😀",
      ),
    },
    { weight: 1, arbitrary: hostileString.map((s) => percentEncode(s, /[A-Za-z0-9._~%-]/)) },
  );
  const rest = fc.oneof(
    fc.constant(""),
    fc
      .array(
        hostileString.map((s) => percentEncode(s, /[A-Za-z0-9._~!$&'()*+,;=:@-]/)),
        { maxLength: 3 },
      )
      .map((segs) => `/${segs.join("/")}`),
  );
  const caller = fc.option(
    fc.record({
      from: fc.constantFrom(
        "/echo/hot-1",
        "/echo/hot-2",
        "/threads/x",
        "echo/hot-1",
        "/echo/",
        "/",
        "",
        "/echo/a b",
        "/echo/hot-1/extra",
      ),
      session: fc.constantFrom("@wl", "@tester", "@other", "", "no-such-session"),
      secret: fc.constantFrom("@right", "@last-byte", "@first-byte", "", "x"),
      depth: fc.option(
        fc.constantFrom("0", "1", "50", "51", "999999999", "1000000000", "-1", "1.5", " 1", "\u00b9", "0x1"),
        { nil: undefined },
      ),
    }),
    { nil: null, freq: 3 },
  );
  const host = hostnameAware
    ? fc.option(
        fc.constantFrom("fuzz.example", "FUZZ.EXAMPLE:8080", "other.example", "", "[::1]:80", "a b", "fuzz.example."),
        { nil: undefined },
      )
    : fc.constant(undefined);
  // A third of the requests are well formed (a registered namespace, a valid id, a credential the
  // namespace accepts, no caller claim), so that many reach a worker; the rest mutate everything.
  const plain = fc.record({
    method: fc.constantFrom("GET", "GET", "POST", "PUT", "DELETE", "HEAD"),
    ns: fc.constantFrom("/echo", "/echo", "/threads", "/secure"),
    id: fc.oneof(fc.constantFrom(...HOT_IDS), fc.stringMatching(/^[A-Za-z0-9._~-]{1,24}$/)),
    rest: fc.constantFrom("", "/", "/a/b", "/x.json"),
    query: fc.option(queryString, { nil: undefined }),
    epoch: fc.option(fc.constantFrom("1", "abc"), { nil: undefined }),
    extra: fc.constant<Array<[string, string]>>([]),
    body: fc.option(bodyText(fc.constant({ a: "1" })), { nil: undefined }),
    auth: fc.constant("data"),
    caller: fc.constant(null),
    host: hostnameAware ? fc.constantFrom("fuzz.example", "FUZZ.EXAMPLE:8080") : fc.constant(undefined),
  });
  const hostile = fc.record({
    method: fc.constantFrom("GET", "GET", "GET", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "HEAD", "PURGE"),
    ns,
    id,
    rest,
    query: fc.option(queryString, { nil: undefined }),
    epoch: fc.option(
      fc.oneof(fc.constantFrom("1", "0", "", "-1", "99999999999999999999999", "abc", "1 2"), headerValue),
      { nil: undefined },
    ),
    extra: extraHeaders,
    body: fc.option(fc.oneof(hostileString, bodyText(fc.constant({ a: "1" }))), { nil: undefined }),
    auth: fc.constantFrom("none", "data", "data", "data-no-scope", "data-other-ns", "worker", "bad", "garbage"),
    caller,
    host,
  });
  return fc.oneof({ weight: 2, arbitrary: hostile }, { weight: 1, arbitrary: plain }).map((r) => {
    const headers: Array<[string, string]> = [...r.extra];
    if (r.epoch !== undefined) headers.push(["pinboard-epoch", r.epoch]);
    if (r.host !== undefined) headers.push(["host", r.host]);
    const hasBody = r.method !== "GET" && r.method !== "HEAD" && r.body !== undefined;
    return {
      method: r.method,
      path: `${r.ns}/${r.id}${r.rest}${r.query !== undefined ? `?${r.query}` : ""}`,
      headers,
      ...(hasBody ? { body: r.body } : {}),
      auth: r.auth,
      caller: r.caller,
    };
  });
}

/** FuzzEcho's answer, exactly. */
const fuzzEchoBody = z.strictObject({
  ns: z.string().regex(/^\/[^/]+$/),
  id: z.string().min(1),
  path: z.string(),
  method: z.string().min(1),
  bytes: z.number().int().nonnegative(),
  pinboardHeaders: z.array(z.string()),
});

/** Relayed worker answers (414/431 left out: the worker's HTTP server, not its handler, sent them). */
const forwarding = { relayed: 0, relayedOk: 0 };
/** Forwards the workers' handlers saw: FuzzEcho's, and the challenge server's for anything but its challenge route. */
const forwardsSeen = () => echoForwards + cs.seen.filter((r) => !r.url.startsWith("/_pinned/")).length;

/** Runs a data-plane property and proves its requests reached the workers. */
async function reachingWorkers(what: string, run: () => Promise<void>, options: { someOk: boolean }): Promise<void> {
  const before = { seen: forwardsSeen(), ...forwarding };
  await run();
  const seen = forwardsSeen() - before.seen;
  const relayedCount = forwarding.relayed - before.relayed;
  console.log(
    `fuzz-routes ${what}: ${seen} forward(s) reached the workers, ${relayedCount} answer(s) relayed, ${forwarding.relayedOk - before.relayedOk} of them 200`,
  );
  expect(seen, `${what}: no forward reached a worker`).toBeGreaterThan(0);
  if (options.someOk)
    expect(forwarding.relayedOk - before.relayedOk, `${what}: no worker answered 200`).toBeGreaterThan(0);
  // Every relayed 200 came from a FuzzEcho instance that counted the request.
  expect(seen).toBeGreaterThanOrEqual(forwarding.relayedOk - before.relayedOk);
}

function callerHeaders(c: NonNullable<DataPlaneRequest["caller"]>): Array<[string, string]> {
  const session =
    c.session === "@wl"
      ? sessions.wl
      : c.session === "@tester"
        ? sessions.tester
        : c.session === "@other"
          ? sessions.other
          : c.session;
  const right = session === sessions.wl ? wl.secret : cs.secret;
  const secret =
    c.secret === "@right"
      ? right
      : c.secret === "@last-byte"
        ? `${right.slice(0, -1)}${right.endsWith("x") ? "y" : "x"}`
        : c.secret === "@first-byte"
          ? `${right.startsWith("x") ? "y" : "x"}${right.slice(1)}`
          : c.secret;
  const out: Array<[string, string]> = [
    ["pinboard-from", c.from],
    ["pinboard-session", session],
    ["pinboard-session-secret", secret],
  ];
  if (c.depth !== undefined) out.push(["pinboard-subrequest-depth", c.depth]);
  return out;
}

async function dataPlaneCheck(app: TestPinboard, req: DataPlaneRequest): Promise<void> {
  const headers = new Headers();
  for (const [name, value] of req.headers) headers.append(name, value);
  if (req.caller) for (const [name, value] of callerHeaders(req.caller)) headers.set(name, value);
  const auth = {
    none: undefined,
    data: tokens.data,
    "data-no-scope": tokens.dataNoScope,
    "data-other-ns": tokens.dataOtherNs,
    worker: tokens.worker,
    bad: tokens.bad[3],
    garbage: "garbage",
  }[req.auth];
  if (auth !== undefined) headers.set("authorization", `Bearer ${auth}`);
  const init: RequestInit = { method: req.method, headers, ...(req.body !== undefined ? { body: req.body } : {}) };
  const context = () =>
    `${req.method} ${req.path.slice(0, 300)} ${JSON.stringify([...headers]).slice(0, 400)} body=${(req.body ?? "").slice(0, 100)}`;

  const relayed = (o: Outcome) => o.headers.get("x-accel-buffering") === "no";
  // Redis' clock before the request is sent and after it is answered: the resolve script's TIME lies between.
  let sentAt = 0;
  let answeredAt = 0;
  const o = await judged(
    async () => {
      sentAt = await t.redis.timeMs();
      const answer = await exchange(app, req.path, init);
      answeredAt = await t.redis.timeMs();
      return answer;
    },
    // Every answer of Pinboard's own that is not a 2xx is a refusal (a worker's relayed answer is not).
    (r) => !relayed(r) && refused(r),
    context,
    false,
    // The one refusal the spec makes write: takeover-pending fences the row (its wind-down expiry)
    // and queues the wind_down to the owner (hostname-aware mode).
    (r, key) =>
      r.status === 503 &&
      r.text === '{"error":"takeover in progress, retry"}' &&
      (key.endsWith(":placements") || key.includes("{global}:queue:") || key.endsWith("{global}:msgids")),
  );
  const where = `${context()} → ${o.status} ${o.text.slice(0, 200)}`;

  if (relayed(o)) {
    // A worker's answer: the FuzzEcho instance (200), the challenge server's 404, an epoch guard's
    // 409, the worker's HTTP server refusing a URL longer than its header limit (414/431).
    expect([200, 404, 409, 414, 431], where).toContain(o.status);
    if (o.status !== 414 && o.status !== 431) forwarding.relayed++;
    if (o.status === 200) {
      // Only FuzzEcho answers 200 (the challenge server answers 200 on /_pinned/challenge alone,
      // no namespace). Its body says what reached it, as the contract's forward sends it.
      forwarding.relayedOk++;
      if (req.method !== "HEAD") {
        const seen = fuzzEchoBody.parse(JSON.parse(o.text));
        expect(seen.method, where).toBe(req.method);
        expect(seen.pinboardHeaders, where).toEqual(["pinboard-attestation", "pinboard-epoch"]);
      }
    }
    return;
  }
  expect([400, 401, 403, 404, 503, 508], where).toContain(o.status);
  if (o.status === 503) {
    // Whole seconds, at least 1, never more than one lease (HEAD too, whose refusal has no body to name it).
    expect(o.headers.get("retry-after"), where).toMatch(/^[1-9][0-9]*$/);
    expect(Number(o.headers.get("retry-after")), where).toBeLessThanOrEqual(LEASE_S);
  }
  if (req.method === "HEAD") return;
  if (o.status === 400 && o.headers.get("content-type")?.startsWith("text/plain")) {
    expect(o.text, where).toMatch(/^(invalid id|empty id)$/);
    return;
  }
  expectJsonError(o, where);
  const error = JSON.parse(o.text).error as string;
  if (o.status === 503) {
    expect(REFUSALS.has(error), where).toBe(true);
    const [least, most] = await retryAfterBounds(app, req, error, sentAt, answeredAt);
    const retryAfter = Number(o.headers.get("retry-after"));
    expect(retryAfter, `${where}: Retry-After`).toBeGreaterThanOrEqual(least);
    expect(retryAfter, `${where}: Retry-After`).toBeLessThanOrEqual(most);
  }
  const registry = /^\/registry(\/|$)/.test(new URL(`http://x${req.path}`).pathname);
  if (o.status === 401)
    expect(registry ? ["unauthorized"] : ["invalid credential", "authentication required"], where).toContain(error);
  if (o.status === 404) expect(error, where).toBe(registry ? "not found" : "unknown namespace");
}

/** The refusals whose Retry-After counts down a window; every other refusal's is 1 (remaining 0). */
const WINDOW_REFUSALS = new Set([
  "registry cold start, retry",
  "hostname binding displaced, retry",
  "takeover in progress, retry",
]);

/**
 * The Retry-After a data-plane 503 must carry, max(1, ceil(remaining / 1000)) as the contract
 * computes it: 1 for a refusal without a window; for a window, its end read back from Redis (the
 * bucket's boot_time + lease, the binding's quarantine, the row's fence) against Redis' clock
 * when the request was sent and when it was answered. Answers [least, most]: equal but for a
 * second boundary crossed while the request ran.
 */
async function retryAfterBounds(
  app: TestPinboard,
  req: DataPlaneRequest,
  error: string,
  sentAt: number,
  answeredAt: number,
): Promise<[number, number]> {
  if (!WINDOW_REFUSALS.has(error)) return [1, 1];
  const { keys } = app.deps;
  const [, segment = "", id = ""] = new URL(`http://x${req.path}`).pathname.split("/");
  const ns = `/${segment}`;
  const bucket = keys.bucketOf(id);
  const hostname = requestHostname(req.headers.findLast(([name]) => name.toLowerCase() === "host")?.[1]) ?? "";
  let until: number;
  if (error === "registry cold start, retry") {
    until = Number(await t.redis.client.get(keys.bootTime(bucket))) + Number(LEASE_MS);
  } else if (error === "hostname binding displaced, retry") {
    until = Number(await t.redis.hget(keys.bindingQuarantine, `${hostname}${ns}`));
  } else {
    const binding = (await t.redis.hget(keys.hostnameBindings, `${hostname}${ns}`)) ?? "";
    const env = binding.split("\n")[0] ?? "";
    const row = (await t.redis.hget(keys.placements(bucket, env, ns), id)) ?? "";
    until = Number(row.split("\n")[2]);
  }
  expect(until, `the end of the ${error} window for ${hostname}${ns}/${id}`).toBeGreaterThan(sentAt);
  const seconds = (now: number) => Math.max(1, Math.ceil((until - now) / 1000));
  return [seconds(answeredAt), seconds(sentAt)];
}

// ---------------------------------------------------------------------------------------------
// Regressions: what the fuzz found, pinned down

describe("regressions found by the fuzz", () => {
  it("a lone surrogate in any string of a JSON body (value or key) is 400 invalid json, not a 500, changing nothing", async () => {
    const cases: Array<[string, string, string]> = [
      [
        "/registry/register",
        "worker",
        `{"clientId":"\\ud800","secret":"s","namespaces":["/threads"],"advertiseUrl":"@@cs-url@@","headroom":1,"draining":false,"challenge":"c","challengeValue":"v"}`,
      ],
      [
        "/registry/register",
        "worker",
        `{"clientId":"c","secret":"\\udc00x","namespaces":["/threads"],"advertiseUrl":"@@cs-url@@","headroom":1,"draining":false,"challenge":"c","challengeValue":"v"}`,
      ],
      [
        "/registry/register",
        "worker",
        `{"clientId":"c","secret":"s","namespaces":["/threads"],"advertiseUrl":"@@cs-url@@","headroom":1,"draining":false,"challenge":"\\ud800","challengeValue":"v"}`,
      ],
      [
        "/registry/heartbeat",
        "worker",
        `{"sessionId":"@@sid-tester@@","headroom":1,"draining":false,"challenge":"a\\ud83d","challengeValue":"v"}`,
      ],
      ["/registry/tag", "worker", `{"sessionId":"s","namespace":"/threads","id":"a","epoch":"1","tag":"\\ud800"}`],
      ["/registry/release", "worker", `[{"sessionId":"s","namespace":"/threads","id":"a","\\udfff":1}]`],
      ["/registry/drain", "operator", `{"clientId":"\\ud800","deadline":null}`],
      ["/registry/wind_down", "operator", `{"namespace":"/threads","id":"\\udbff","deadline":null}`],
    ];
    for (const [route, scope, raw] of cases) {
      const body = await fill(raw, 0);
      const o = await judged(
        () =>
          exchange(pb, route, {
            method: "POST",
            headers: {
              authorization: `Bearer ${scope === "worker" ? tokens.workerAll : tokens.operator}`,
              "content-type": "application/json",
            },
            body,
          }),
        () => true,
        () => `${route} ${body}`,
      );
      expect(o.status, `${route} ${body}`).toBe(400);
      expect(JSON.parse(o.text), `${route} ${body}`).toEqual({ error: "invalid json" });
    }
    // Well-formed pairs are fine: an astral character in a string is no refusal.
    const ok = await exchange(pb, "/registry/tag", {
      method: "POST",
      headers: { authorization: `Bearer ${tokens.workerAll}` },
      body: JSON.stringify({
        sessionId: sessions.tester,
        namespace: "/threads",
        id: "astral",
        epoch: "1",
        tag: "\ud83d\ude00",
      }),
    });
    expect(ok.status).toBe(200);
  });

  it("the probe treats a challenge it cannot URL-encode as a failed probe", async () => {
    const outcome = await probeChallenge(
      { fetch, timeoutMs: 1000, log: { debug() {}, info() {}, warn() {}, error() {} } },
      { advertiseUrl: cs.url, secret: cs.secret, challenge: "\ud800", challengeValue: "v" },
    );
    expect(outcome).toBe("fail");
  });

  // Regression: a re-registered client's previous session keeps entries in the lists of
  // namespaces its new registration dropped; the resolve script must skip (and prune) a candidate
  // without a record before writing anything, never answer 500.
  it("re-registering a client with another namespace set leaves nothing behind that a placement trips on", async () => {
    const first = await registerOk(
      pb,
      tokens.workerAll,
      registerBody(cs, { clientId: "re-register-1", namespaces: ["/dropped"] }),
    );
    await registerOk(pb, tokens.workerAll, registerBody(cs, { clientId: "re-register-1", namespaces: ["/kept"] }));
    const res = await exchange(pb, "/dropped/x-1", { method: "GET" });
    const rows = await t.keys("pinboard:*:/dropped:placements");
    // Clean up before asserting: the orphaned session must not poison the rest of the file.
    for (const key of rows) await t.redis.client.del(key);
    for (let b = 0; b < 16; b++) await t.redis.client.hdel(`pinboard:{${b}}:nsw:/dropped`, first.sessionId);
    expect(res.status, res.text).not.toBe(500);
    expect([404, 503]).toContain(res.status);
    expect(rows).toEqual([]);
  });
});

// ---------------------------------------------------------------------------------------------
// Oversized bodies

const MiB = 1024 * 1024;
const LIMITS: Array<[string, number, "worker" | "operator"]> = [
  ["/registry/register", 8 * MiB, "worker"],
  ["/registry/heartbeat", MiB, "worker"],
  ["/registry/release", MiB, "worker"],
  ["/registry/tag", MiB, "worker"],
  ["/registry/deregister", MiB, "worker"],
  ["/registry/wind_down", MiB, "operator"],
  ["/registry/drain", MiB, "operator"],
  ["/registry/undrain", MiB, "operator"],
];

/** A 50 MB request body that is produced only as it is pulled, counting what was pulled. */
function countingBody(
  totalBytes: number,
  chunkBytes = 64 * 1024,
): { stream: ReadableStream<Uint8Array>; pulled: () => number; cancelled: () => boolean } {
  const chunk = new Uint8Array(chunkBytes).fill(0x20); // spaces: valid JSON whitespace, for as long as it goes
  let pulled = 0;
  let cancelled = false;
  const stream = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (pulled >= totalBytes) return controller.close();
      pulled += chunk.byteLength;
      controller.enqueue(chunk.slice());
    },
    cancel() {
      cancelled = true;
    },
  });
  return { stream, pulled: () => pulled, cancelled: () => cancelled };
}

describe("oversized bodies are cut at the limit (in-process)", () => {
  for (const [route, limit, scope] of LIMITS) {
    it(`${route}: a 50 MB streamed body is 413 after reading about ${limit / MiB} MiB, changing nothing`, async () => {
      const token = scope === "worker" ? tokens.workerAll : tokens.operator;
      const body = countingBody(50 * 1000 * 1000);
      const o = await judged(
        () =>
          exchange(pb, route, {
            method: "POST",
            headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
            body: body.stream,
            duplex: "half",
          } as RequestInit),
        () => true,
        () => `${route} 50 MB`,
      );
      expect(o.status).toBe(413);
      expect(JSON.parse(o.text)).toEqual({ error: "body too large" });
      expect(body.pulled()).toBeGreaterThan(limit);
      expect(body.pulled()).toBeLessThanOrEqual(limit + 4 * 64 * 1024);
      expect(body.cancelled()).toBe(true);
    });
  }

  it("a declared Content-Length over the limit is 413 before the body is read at all", async () => {
    for (const [route, limit, scope] of LIMITS) {
      const token = scope === "worker" ? tokens.workerAll : tokens.operator;
      const body = countingBody(50 * 1000 * 1000);
      const o = await exchange(pb, route, {
        method: "POST",
        headers: {
          authorization: `Bearer ${token}`,
          "content-type": "application/json",
          "content-length": String(limit + 1),
        },
        body: body.stream,
        duplex: "half",
      } as RequestInit);
      expect(o.status, route).toBe(413);
      expect(body.pulled(), route).toBeLessThanOrEqual(2 * 64 * 1024); // at most what the stream pre-pulls on its own
    }
  });

  it("an unauthenticated 50 MB body is 401 without being read", async () => {
    const body = countingBody(50 * 1000 * 1000);
    const o = await exchange(pb, "/registry/heartbeat", {
      method: "POST",
      body: body.stream,
      duplex: "half",
    } as RequestInit);
    expect(o.status).toBe(401);
    expect(body.pulled()).toBeLessThanOrEqual(2 * 64 * 1024);
  });
});

// ---------------------------------------------------------------------------------------------
// The real Node entry

describe("through the real Node process", () => {
  let fleet: Fleet;
  beforeAll(async () => {
    fleet = await startFleet({ workers: 1 });
    await fleet.skipColdStart();
  }, 60_000);
  afterAll(() => fleet?.close());

  for (const [route, limit] of [
    ["/registry/heartbeat", MiB],
    ["/registry/register", 8 * MiB],
  ] as const) {
    it(`${route}: a slowly written 50 MB chunked body is answered 413 early and the connection closed`, {
      timeout: 30_000,
    }, async () => {
      const result = await slowUpload(`${fleet.pb.url}${route}`, {
        headers: { authorization: `Bearer ${await fleet.pb.workerCredential()}` },
        totalBytes: 50 * 1000 * 1000,
      });
      expect(result.status).toBe(413);
      expect(JSON.parse(result.body)).toEqual({ error: "body too large" });
      // Answered once the limit was passed: what the client had written by then is the limit plus
      // what sits in socket buffers, nowhere near 50 MB.
      expect(result.writtenAtResponse).toBeGreaterThan(limit);
      expect(result.writtenAtResponse).toBeLessThan(limit + 8 * MiB);
      // Then the server stops listening: it closes the connection instead of reading the rest.
      expect(result.closedAfterMs).not.toBeNull();
      expect(result.closedAfterMs!).toBeLessThan(3000);
      expect(result.written).toBeLessThan(30 * 1000 * 1000);
    });
  }

  it("a declared 50 MB Content-Length is answered 413 at once and the connection closed", {
    timeout: 30_000,
  }, async () => {
    const result = await slowUpload(`${fleet.pb.url}/registry/heartbeat`, {
      headers: { authorization: `Bearer ${await fleet.pb.workerCredential()}` },
      totalBytes: 50 * 1000 * 1000,
      declaredLength: 50 * 1000 * 1000,
    });
    expect(result.status).toBe(413);
    expect(result.writtenAtResponse).toBeLessThan(8 * MiB);
    expect(result.closedAfterMs).not.toBeNull();
    expect(result.written).toBeLessThan(30 * 1000 * 1000);
  });

  it("a refused request whose body stalls half-sent does not hold its keep-alive connection", {
    timeout: 30_000,
  }, async () => {
    // 401 before the body is read; the client then sends nothing more. The connection must be
    // closed within seconds, not kept (with its parser mid-body) for the 65 s keep-alive timeout.
    const url = new URL(fleet.pb.url);
    const socket = connect(Number(url.port), url.hostname);
    let answer = "";
    let answeredAt = 0;
    socket.on("data", (d: Buffer) => {
      answer += d.toString("latin1");
      answeredAt ||= Date.now();
    });
    socket.on("error", () => {});
    socket.write(
      `POST /registry/heartbeat HTTP/1.1\r\nHost: ${url.host}\r\nContent-Type: application/json\r\nContent-Length: 1048576\r\n\r\n${"x".repeat(1024)}`,
    );
    await new Promise<void>((resolve) => socket.once("close", () => resolve()));
    expect(answer).toMatch(/^HTTP\/1\.1 401 /);
    expect(answer).toContain('{"error":"unauthorized"}');
    expect(Date.now() - answeredAt).toBeLessThan(3000);
  });

  it("hostile requests through the process: never a 500, never a hang, JSON errors", {
    timeout: 90_000 * SCALE,
  }, async () => {
    const worker = await fleet.pb.workerCredential();
    const operator = await fleet.pb.operatorCredential();
    const request = fc.oneof(
      fc.tuple(
        fc.constantFrom(
          "/registry/register",
          "/registry/heartbeat",
          "/registry/release",
          "/registry/tag",
          "/registry/deregister",
          "/registry/wind_down",
          "/registry/drain",
          "/registry/undrain",
        ),
        fc.oneof(hostileJsonText, brokenJsonText, derivedJsonText, deepJsonText),
        fc.constantFrom("POST"),
      ),
      fc.tuple(
        fc.constantFrom("/registry/overview", "/registry/workers", "/registry/health", "/metrics"),
        queryString.map((q) => (q ? `?${q}` : "")),
        fc.constantFrom("GET"),
      ),
      fc.tuple(
        dataPlaneRequest(false).map((r) => r.path),
        fc.constant(""),
        fc.constantFrom("GET", "POST", "DELETE"),
      ),
    );
    await fc.assert(
      fc.asyncProperty(request, contentTypes, fc.boolean(), async ([path, extra, method], type, asOperator) => {
        const isGet = method === "GET";
        const url = `${fleet.pb.url}${isGet ? `${path}${extra}` : path}`;
        const headers: Record<string, string> = {
          authorization: `Bearer ${asOperator || path === "/metrics" ? operator : worker}`,
        };
        if (type) headers["content-type"] = type;
        const res = await raceTimeout(
          fetch(url, { method, headers, ...(isGet ? {} : { body: extra }), redirect: "manual" }),
          `${method} ${url.slice(0, 200)}`,
        );
        const text = await res.text();
        const where = `${method} ${url.slice(0, 300)} → ${res.status} ${text.slice(0, 200)}`;
        expect(res.status, where).not.toBe(500);
        expect(res.status, where).toBeLessThan(502);
        // Node's HTTP parser refuses a request line or headers past 16 KiB before the app sees them.
        if (res.status === 414 || res.status === 431) return;
        if (
          res.status >= 400 &&
          res.headers.get("x-accel-buffering") !== "no" &&
          !res.headers.get("content-type")?.startsWith("text/plain")
        ) {
          expect(typeof (JSON.parse(text) as { error?: unknown }).error, where).toBe("string");
        }
      }),
      { numRuns: runs(80), ...SEED },
    );
    expect(fleet.pb.output()).not.toMatch(/unhandled error|internal error/);
  });

  // Regression: `Expect: 100-continue` (curl sends it for bodies over 1 KB) is answered between
  // client and Pinboard and not forwarded (undici's fetch refuses it, which was a 502).
  it("forwards a body sent with Expect: 100-continue", async () => {
    const res = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = httpRequest(
        `${fleet.pb.url}/echo/expect-1`,
        { method: "POST", headers: { "content-type": "text/plain", expect: "100-continue", "content-length": "5" } },
        (r) => {
          let body = "";
          r.setEncoding("utf8");
          r.on("data", (d: string) => (body += d));
          r.on("end", () => resolve({ status: r.statusCode ?? 0, body }));
        },
      );
      req.on("continue", () => req.end("hello"));
      req.on("error", reject);
    });
    expect(res.status, res.body).toBe(200);
  });
});

async function raceTimeout<T>(promise: Promise<T>, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`hang: ${what}`)), TIMEOUT_MS))),
    ]);
  } finally {
    clearTimeout(timer);
  }
}
