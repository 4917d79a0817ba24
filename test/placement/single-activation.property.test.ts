/**
 * Single activation, as a model-based property test (issue 7, item 1).
 *
 * fast-check generates sequences of actions — register, heartbeat, lease expiry, resolve, release,
 * tag, wind_down, drain/undrain, deregister, Redis restarts — for three workers (challenge
 * servers) and two in-process Pinboard nodes sharing one real Redis. Some steps run two API
 * actions at once; the result must then be explained by one of the two serial orders. After every
 * step the test checks:
 *
 *   (a) at most one owner: a row names one session, the worker that holds (id, epoch) is the one
 *       that was handed that epoch and nobody else ever is; a live owner whose wind-down has not
 *       passed keeps its row (same session, same epoch) on every resolve; two nodes resolving the
 *       same id in the same step name the same session and epoch; fresh placements go to eligible
 *       live workers only;
 *   (b) placement epochs strictly increase per bucket, across flushes and restarts of Redis (the
 *       epoch counter is lost then and the now-based component must carry them);
 *   (c) release and tag with another session or another epoch change nothing at all (the whole
 *       keyspace is compared before and after), and with the right ones touch exactly that row
 *       (in a pair, where the keyspace moves for the other action, the rows are compared);
 * and that Redis holds exactly what the model says (rows, records, bucket mirrors, namespace
 * lists, client map).
 *
 * The clock. Every script takes `now` from Redis TIME, so lease expiry could be driven by
 * sleeping past a short lease. Instead the lease is a minute (nothing expires by itself during a
 * run) and expiry is a step of its own that rewrites what the scripts compare `now` with: the
 * session's expiry in its record, bucket mirrors and namespace-list entries; a row's wind-down
 * expiry; a timed drain's deadline; the buckets' boot_time. That keeps runs fast (a whole
 * sequence takes well under a second), makes each step's outcome a function of the steps before
 * it rather than of scheduling, and lets shrinking replay a failure exactly. The states reached
 * are ones real time reaches too: a worker whose expiry lies in the past is one that missed its
 * heartbeats while the others kept theirs.
 *
 * Reproducing a failure: the failure message carries the seed, the path and the shrunk actions.
 * Re-run with PINBOARD_PROPERTY_SEED=<seed> to replay the whole search, and add
 * `{ seed, path }` to REGRESSION_SEEDS below to replay the shrunk case on every run (or paste
 * the shrunk action list into REGRESSION_CASES, which survives changes to the generators).
 */
import fc from "fast-check";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { resolvePlacement } from "../../src/placement/resolver.ts";
import {
  type Action,
  type ApiAction,
  type ClockAction,
  compareWorld,
  count,
  emptyModel,
  exec,
  type Model,
  type Plan,
  plan,
  type StepContext,
  stats,
  step,
  Violation,
} from "../support/activation-model.ts";
import {
  clientIdOf,
  endColdStart,
  IDS,
  keys,
  keyspace,
  NS,
  readWorld,
  startWorld,
  WORKERS,
  type World,
} from "../support/activation-world.ts";
import { heartbeatBody, registerBody, registerOk } from "../support/registration.ts";

/**
 * Failing seeds kept as regression cases, replayed on every run before the random search. Add the
 * `{ seed, path }` printed by a failure: the path replays the shrunk counterexample, as long as
 * the generators below are unchanged (otherwise keep the printed actions in REGRESSION_CASES).
 * Placement picks a worker at random, so a replay runs the same actions, not always the same
 * placements.
 */
const REGRESSION_SEEDS: Array<{ seed: number; path: string; note?: string }> = [
  {
    seed: 208536125,
    path: "74:4:1:1:1:3:5:4:7:7:8:8:11:8:12:10:8:11:9:8:9:13:11:9:10:6:3:3:3:7:5:4:4:5:7:5:6:4:4:5:4:4:6:4:5:4:4:9:4:7:5",
    note: "a register quoting another client's live session as prevSessionId reclaimed its row at its epoch (fixed in register-session)",
  },
  {
    seed: 1641571915,
    path: "6:2:1:2:3:3:4:4:3:3:3:3:3:2:2:2:2:2:2:2:2:2:2:2:2:2:2:2:2:2:2:2:2:2:2:2:2",
    note: "two drains of one client at once: the model took the first order that explained the answers while Redis held the other (fixed: the world's drain keys are compared)",
  },
];

/**
 * Shrunk counterexamples kept verbatim (the `actions` array printed by a failure): they survive
 * changes to the generators, which invalidate a seed's path. Those of concurrent pairs replay the
 * same actions, not necessarily the same interleaving; the deterministic reproductions below pin
 * the interleavings down.
 */
const REGRESSION_CASES: Action[][] = [
  // seed 1641571915: a timed drain and a cordon of one client at once; both orders answer alike,
  // and the model must follow the one Redis took (the drain keys are compared since).
  [
    { k: "register", w: 0, node: 0, prev: "none", pick: 0, instances: "none", ids: [], draining: false },
    { k: "register", w: 1, node: 1, prev: "none", pick: 0, instances: "none", ids: [], draining: false },
    { k: "pair", a: { k: "drain", w: 0, deadline: 0 }, b: { k: "drain", w: 0, deadline: null } },
    { k: "register", w: 0, node: 0, prev: "none", pick: 0, instances: "random", ids: [], draining: false },
    { k: "heartbeat", w: 0, node: 0, probe: "pass", draining: false },
  ],
  // seed 1510338271: an undrain racing the client's re-register answered 403 (fixed in drain.ts).
  [
    { k: "resolve", id: 2, node: "both", exclude: null },
    {
      k: "pair",
      a: { k: "register", w: 0, node: 0, prev: "own", pick: 2, instances: "none", ids: [4], draining: true },
      b: { k: "register", w: 1, node: 0, prev: "own", pick: 8, instances: "held", ids: [4], draining: false },
    },
    { k: "register", w: 2, node: 0, prev: "own", pick: 36, instances: "held", ids: [1, 4], draining: false },
    {
      k: "pair",
      a: { k: "undrain", w: 2 },
      b: { k: "register", w: 2, node: 1, prev: "none", pick: 4, instances: "none", ids: [], draining: false },
    },
  ],
  // seed 1289870265: a drain racing a re-register was undone in the bucket mirrors (fixed: record revisions).
  [
    { k: "register", w: 2, node: 0, prev: "own", pick: 0, instances: "held", ids: [], draining: false },
    { k: "heartbeat", w: 0, node: 0, probe: "pass", draining: false },
    { k: "windDown", id: null, deadline: 0 },
    { k: "resolve", id: 0, node: "both", exclude: null },
    { k: "windDownPasses", id: 0 },
    { k: "resolve", id: 0, node: 0, exclude: null },
    { k: "deregister", w: 0, node: 0 },
    {
      k: "pair",
      a: { k: "drain", w: 2, deadline: 0 },
      b: { k: "register", w: 2, node: 0, prev: "own", pick: 0, instances: "held", ids: [], draining: false },
    },
  ],
  // seed 487147098: the same race once revisions were in (fixed: heartbeat-bucket takes a bucket over for a newer registration).
  [
    { k: "register", w: 1, node: 0, prev: "own", pick: 0, instances: "random", ids: [], draining: false },
    { k: "resolve", id: 0, node: "both", exclude: null },
    { k: "register", w: 0, node: 0, prev: "own", pick: 0, instances: "held", ids: [], draining: false },
    { k: "tag", id: 0, node: 0, who: "owner", epoch: "empty", tag: "t1" },
    { k: "tag", id: 0, node: 0, who: 0, epoch: "row", tag: "t1" },
    {
      k: "pair",
      a: { k: "register", w: 1, node: 0, prev: "own", pick: 0, instances: "held", ids: [], draining: false },
      b: { k: "drain", w: 1, deadline: 0 },
    },
  ],
];

const NUM_RUNS = Number(process.env.PINBOARD_PROPERTY_RUNS ?? 40);
const TIME_BUDGET_MS = Number(process.env.PINBOARD_PROPERTY_BUDGET_MS ?? 40_000);
/**
 * Floors the random search must reach, so that a loaded machine (the time budget cutting the
 * search short) fails the test instead of passing a near-empty run: half the runs asked for, and
 * as many distinct interleavings of concurrent pairs ("register → heartbeat": the kinds of the two
 * actions, in the serial order that explained their answers). A run holds two to three pairs of
 * 9 × 9 possible directed kinds: 40 runs executed 41–53 distinct ones, 20 runs 23–39.
 */
const MIN_RUNS = Number(process.env.PINBOARD_PROPERTY_MIN_RUNS ?? Math.ceil(NUM_RUNS / 2));
const MIN_INTERLEAVINGS = Number(process.env.PINBOARD_PROPERTY_MIN_INTERLEAVINGS ?? MIN_RUNS);
const SEED = process.env.PINBOARD_PROPERTY_SEED
  ? Number(process.env.PINBOARD_PROPERTY_SEED)
  : (Date.now() ^ (Math.random() * 0x7fffffff)) | 0;

// ── generators ─────────────────────────────────────────────────────────────────────────────

function weighted<T>(...pairs: Array<[T, number]>): fc.Arbitrary<T> {
  return fc.oneof(...pairs.map(([value, weight]) => ({ arbitrary: fc.constant(value), weight })));
}

const w = fc.integer({ min: 0, max: WORKERS - 1 });
const node = fc.integer({ min: 0, max: 1 });
const id = fc.integer({ min: 0, max: IDS.length - 1 });
const who = fc.oneof({ arbitrary: fc.constant("owner" as const), weight: 3 }, { arbitrary: fc.nat(40), weight: 2 });
const epochPick = weighted<"row" | "older" | "newer" | "empty" | "other">(
  ["row", 4],
  ["older", 1],
  ["newer", 1],
  ["empty", 1],
  ["other", 1],
);
const deadline = fc.option(fc.nat(120), { nil: null, freq: 3 });

const api = {
  register: fc.record({
    k: fc.constant("register" as const),
    w,
    node,
    prev: weighted<"own" | "none" | "other">(["own", 6], ["none", 2], ["other", 1]),
    pick: fc.nat(40),
    instances: weighted<"held" | "none" | "random">(["held", 4], ["none", 2], ["random", 2]),
    ids: fc.array(id, { maxLength: 4 }),
    draining: weighted([false, 5], [true, 1]),
  }),
  heartbeat: fc.record({
    k: fc.constant("heartbeat" as const),
    w,
    node,
    probe: weighted<"pass" | "fail" | "mismatch">(["pass", 8], ["fail", 1], ["mismatch", 1]),
    draining: weighted([false, 6], [true, 1]),
  }),
  resolve: fc.record({
    k: fc.constant("resolve" as const),
    id,
    node: weighted<0 | 1 | "both">([0, 1], [1, 1], ["both", 3]),
    exclude: fc.option(w, { nil: null, freq: 1 }),
  }),
  release: fc.record({ k: fc.constant("release" as const), id, node, who, epoch: epochPick }),
  tag: fc.record({
    k: fc.constant("tag" as const),
    id,
    node,
    who,
    epoch: epochPick,
    tag: fc.constantFrom("t1", "ws:x", "ünï"),
  }),
  windDown: fc.record({ k: fc.constant("windDown" as const), id: fc.option(id, { nil: null, freq: 4 }), deadline }),
  drain: fc.record({ k: fc.constant("drain" as const), w, deadline }),
  undrain: fc.record({ k: fc.constant("undrain" as const), w }),
  deregister: fc.record({ k: fc.constant("deregister" as const), w, node }),
};

const clock = {
  expire: fc.record({ k: fc.constant("expire" as const), w, long: fc.boolean() }),
  windDownPasses: fc.record({ k: fc.constant("windDownPasses" as const), id }),
  drainPasses: fc.record({ k: fc.constant("drainPasses" as const), w }),
  restart: fc.record({
    k: fc.constant("restart" as const),
    how: weighted<"flush" | "restart">(["flush", 3], ["restart", 1]),
    ageBoot: weighted([true, 3], [false, 1]),
  }),
  endColdStart: fc.constant({ k: "endColdStart" as const }),
};

/** Worker-lifecycle calls of one worker are sequential in the worker library (heartbeat may overlap a deregister). */
function pairable(a: ApiAction, b: ApiAction): boolean {
  const lifecycle = (x: ApiAction) => x.k === "register" || x.k === "heartbeat" || x.k === "deregister";
  if (!lifecycle(a) || !lifecycle(b) || a.w !== b.w) return true;
  const kinds = new Set([a.k, b.k]);
  return kinds.size === 2 && kinds.has("heartbeat") && kinds.has("deregister");
}

/** Weight of each API call in a step of its own and as one side of a concurrent pair. */
const API_WEIGHTS: Record<keyof typeof api, { alone: number; paired: number }> = {
  register: { alone: 5, paired: 3 },
  heartbeat: { alone: 5, paired: 3 },
  resolve: { alone: 9, paired: 4 },
  release: { alone: 4, paired: 2 },
  tag: { alone: 2, paired: 1 },
  windDown: { alone: 2, paired: 1 },
  drain: { alone: 1, paired: 1 },
  undrain: { alone: 1, paired: 1 },
  deregister: { alone: 1, paired: 1 },
};
const API_KINDS = Object.keys(API_WEIGHTS) as (keyof typeof api)[];

const pairedApi: Record<keyof typeof api, fc.Arbitrary<ApiAction>> = {
  ...api,
  // In a pair, a concurrent drop of the quoted session could turn "another client's session on
  // record" into one gone from the record, which no check can refuse: quote only the own session.
  register: api.register.map((r) => ({ ...r, prev: r.prev === "other" ? ("own" as const) : r.prev })),
  resolve: api.resolve.map((r) => ({ ...r, node: r.node === "both" ? 0 : r.node })),
};

const apiAction: fc.Arbitrary<ApiAction> = fc.oneof(
  ...API_KINDS.map((kind) => ({ arbitrary: pairedApi[kind], weight: API_WEIGHTS[kind].paired })),
);

const action: fc.Arbitrary<Action> = fc.oneof(
  ...API_KINDS.map((kind) => ({ arbitrary: api[kind] as fc.Arbitrary<Action>, weight: API_WEIGHTS[kind].alone })),
  { arbitrary: clock.expire as fc.Arbitrary<ClockAction>, weight: 3 },
  { arbitrary: clock.windDownPasses as fc.Arbitrary<ClockAction>, weight: 2 },
  { arbitrary: clock.drainPasses as fc.Arbitrary<ClockAction>, weight: 1 },
  { arbitrary: clock.restart as fc.Arbitrary<ClockAction>, weight: 1 },
  { arbitrary: clock.endColdStart as fc.Arbitrary<ClockAction>, weight: 1 },
  {
    arbitrary: fc
      .tuple(apiAction, apiAction)
      .filter(([a, b]) => pairable(a, b))
      .map(([a, b]) => ({ k: "pair" as const, a, b })),
    weight: 4,
  },
);

/** Runs start with every worker registered half the time, so that most steps have something to act on. */
const actions = fc
  .tuple(fc.boolean(), fc.array(action, { minLength: 10, maxLength: 40, size: "max" }))
  .map(([warm, rest]): Action[] => [
    ...(warm
      ? Array.from(
          { length: WORKERS },
          (_, i) =>
            ({
              k: "register",
              w: i,
              node: i % 2,
              prev: "none",
              pick: 0,
              instances: "none",
              ids: [],
              draining: false,
            }) as Action,
        )
      : []),
    ...rest,
  ]);

// ── the runner ─────────────────────────────────────────────────────────────────────────────

let world: World;
let ctx: StepContext;
/** Distinct interleavings of concurrent pairs executed (and explained), as "first → second" action kinds. */
const interleavings = new Set<string>();
/** Epoch history carried from run to run: (b) holds across the whole file, not only within a run. */
let carry: Pick<Model, "maxEpoch" | "epochOwner"> = { maxEpoch: {}, epochOwner: {} };

beforeAll(async () => {
  world = await startWorld();
  ctx = {
    bucketOf: world.bucketOf,
    workerUrls: world.workers.map((x) => x.url),
    workerSecrets: world.workers.map((x) => x.secret),
    accountTag: await world.nodes[0]!.deps.accounts.tag("tester"),
  };
}, 60_000);
afterAll(async () => {
  await world?.close();
});

const show = (x: unknown) => JSON.stringify(x);

/** (c) A release or tag changes nothing at all, unless it names the row's session and epoch: then only that row. */
async function checkRowOperation(
  m: Model,
  p: Extract<Plan, { k: "release" | "tag" }>,
  before: Record<string, unknown>,
  after: Record<string, unknown>,
) {
  const row = m.rows[p.id];
  const hit = !!row && row.sid === p.who && row.epoch === p.epoch && m.sessions[p.who]?.state !== "gone";
  const expected = structuredClone(before) as Record<string, Record<string, string>>;
  if (hit) {
    const key = keys.placements(world.bucketOf.get(p.id)!, "*", NS);
    if (p.k === "release") {
      delete expected[key]![p.id];
      if (Object.keys(expected[key]!).length === 0) delete expected[key];
    } else {
      const f = expected[key]![p.id]!.split("\n");
      expected[key]![p.id] = [...f.slice(0, 4), p.tag].join("\n");
    }
  }
  if (show(expected) !== show(after)) {
    const changed = Object.keys({ ...expected, ...after }).filter((k) => show(expected[k]) !== show(after[k]));
    throw new Violation(
      `(c) ${p.k} by ${p.who} quoting ${p.id}@${p.epoch || "''"} (row: ${row ? `${row.sid}@${row.epoch}` : "none"}) ` +
        `changed ${changed.map((k) => `${k}: ${show(expected[k])} → ${show(after[k])}`).join("; ")}`,
    );
  }
}

async function runStep(m: Model, a: Action): Promise<Model> {
  if (a.k === "pair") {
    const [p1, p2] = [plan(m, a.a), plan(m, a.b)];
    const [o1, o2] = await Promise.all([exec(world, p1), exec(world, p2)]);
    const ws = await readWorld(world);
    const errors: unknown[] = [];
    for (const order of [
      [
        [p1, o1],
        [p2, o2],
      ],
      [
        [p2, o2],
        [p1, o1],
      ],
    ] as const) {
      const c = structuredClone(m);
      try {
        for (const [p, o] of order) step(c, p, o, ctx);
        compareWorld(c, ws, ctx);
        count(order[0][0] === p1 ? "pair: first order" : "pair: second order");
        // The interleaving that ran, as the serial order that explains it.
        interleavings.add(`${order[0][0].k} → ${order[1][0].k}`);
        return c;
      } catch (err) {
        errors.push(err);
      }
    }
    const msg =
      `no serial order explains concurrent ${show(p1)} ‖ ${show(p2)} (answers ${show(o1)} ‖ ${show(o2)}):\n` +
      errors.map((e, i) => `  order ${i + 1}: ${String(e)}`).join("\n");
    throw errors.every((e) => e instanceof Violation) ? new Violation(msg) : new Error(msg);
  }
  const p = plan(m, a);
  const before = p.k === "release" || p.k === "tag" ? await keyspace(world) : null;
  const o = await exec(world, p);
  if (before && (p.k === "release" || p.k === "tag")) await checkRowOperation(m, p, before, await keyspace(world));
  step(m, p, o, ctx);
  compareWorld(m, await readWorld(world), ctx);
  return m;
}

async function runActions(list: Action[]): Promise<void> {
  await world.flush();
  await endColdStart(world);
  let m = emptyModel(WORKERS, carry);
  m.aged = true;
  try {
    for (const [i, a] of list.entries()) {
      try {
        m = await runStep(m, a);
      } catch (err) {
        const e = err instanceof Error ? err : new Error(String(err));
        e.message = `step ${i} ${show(a)}: ${e.message}`;
        throw e;
      }
    }
  } finally {
    carry = { maxEpoch: m.maxEpoch, epochOwner: m.epochOwner };
  }
}

const property = fc.asyncProperty(actions, runActions);

function report<T>(details: fc.RunDetails<T>): string {
  if (!details.failed) return "";
  return [
    `single-activation property failed after ${details.numRuns} run(s), ${details.numShrinks} shrink(s)`,
    `  replay the search: PINBOARD_PROPERTY_SEED=${details.seed}`,
    `  keep it: add { seed: ${details.seed}, path: ${show(details.counterexamplePath)} } to REGRESSION_SEEDS`,
    `  actions: ${show((details.counterexample as [Action[]] | null)?.[0])}`,
    `  error: ${details.errorInstance instanceof Error ? details.errorInstance.message : String(details.errorInstance)}`,
  ].join("\n");
}

describe("single activation", () => {
  it.each(REGRESSION_SEEDS)(
    "replays regression seed $seed",
    async ({ seed, path }) => {
      const details = await fc.check(property, { seed, path, endOnFailure: true });
      expect(details.failed, report(details)).toBe(false);
    },
    60_000,
  );

  it.each(REGRESSION_CASES.map((c, i) => ({ i, c })))(
    "replays regression case $i",
    async ({ c }) => {
      await runActions(c);
    },
    60_000,
  );

  it(
    "holds over random interleavings of registry, placement, clock and Redis restarts",
    async () => {
      // Count what this search executes, not what the replays above did.
      interleavings.clear();
      for (const key of Object.keys(stats)) delete stats[key];
      console.log(
        `single-activation: seed ${SEED} (replay with PINBOARD_PROPERTY_SEED=${SEED}), ${NUM_RUNS} runs, at least ${MIN_RUNS} runs and ${MIN_INTERLEAVINGS} interleavings`,
      );
      const details = await fc.check(property, {
        seed: SEED,
        numRuns: NUM_RUNS,
        plugins: [fc.interruptAfterTimeLimit(TIME_BUDGET_MS), fc.timeout(20_000)],
      });
      console.log(
        `single-activation: ${details.numRuns} run(s) in budget${details.interrupted ? " (interrupted by the time budget)" : ""}`,
      );
      console.log(`single-activation: exercised ${show(Object.fromEntries(Object.entries(stats).sort()))}`);
      console.log(
        `single-activation: ${interleavings.size} distinct interleavings: ${[...interleavings].sort().join(", ")}`,
      );
      expect(details.failed, report(details)).toBe(false);
      const thin = `a near-empty search (seed ${SEED}${details.interrupted ? `, cut short by the ${TIME_BUDGET_MS} ms budget: a loaded machine?` : ""})`;
      expect(details.numRuns, `only ${details.numRuns} run(s): ${thin}`).toBeGreaterThanOrEqual(MIN_RUNS);
      expect(interleavings.size, `only ${interleavings.size} distinct interleavings: ${thin}`).toBeGreaterThanOrEqual(
        MIN_INTERLEAVINGS,
      );
    },
    TIME_BUDGET_MS + 80_000,
  );
});

/** Deterministic reproductions of what the random search found, kept next to it. */
describe("single activation: minimal reproductions", () => {
  const resolveOn = (n: 0 | 1, id: string) =>
    resolvePlacement(world.nodes[n].deps, { ns: NS, id, env: "*", hostname: "", takeover: "" });
  const register = (w: number, extra: Record<string, unknown> = {}) =>
    registerOk(
      world.nodes[0],
      world.workerToken,
      registerBody(world.workers[w]!, { clientId: clientIdOf(w), namespaces: [NS], ...extra }),
    );

  beforeEach(async () => {
    await world.flush();
    await endColdStart(world);
  });

  it("a register quoting another client's session as prevSessionId does not take over its rows at their epoch", async () => {
    const victim = await register(0);
    const placed = await resolveOn(0, "a");
    expect(placed.sessionId).toBe(victim.sessionId);
    // Same account, another client: the victim is live and holds a@epoch in memory.
    const thief = await register(1, { prevSessionId: victim.sessionId, instances: { [NS]: ["a"] } });
    expect(thief.duplicates).toEqual([{ ns: NS, id: "a" }]);
    const again = await resolveOn(1, "a");
    expect({ sessionId: again.sessionId, epoch: again.epoch }).toEqual({
      sessionId: victim.sessionId,
      epoch: placed.epoch,
    });
  });

  // seen once by the random search as "no serial order explains concurrent windDown ‖ register":
  // a namespace-wide wind_down ran after a bucket's mirror had moved to the re-registered session
  // but before that bucket's reclaimed rows were re-bound to it, found their owner's mirror gone
  // and queued nothing (queued 0, where either order queues 1). Fixed in register-bucket: a
  // bucket's first chunk of reclaimed rows re-binds in the same script that moves the mirror.
  it("a namespace wind_down right after a re-register's bucket mirror finds the reclaimed row with its owner", async () => {
    const first = await register(1);
    const placed = await resolveOn(0, "a");
    expect(placed.sessionId).toBe(first.sessionId);
    const node = world.nodes[0];
    const original = node.deps.redis.run.bind(node.deps.redis);
    const bucketOfA = world.bucketOf.get("a")!;
    let windDown: Response | undefined;
    // Interleave deterministically: the wind_down runs once the register-bucket call of a's bucket is done.
    node.deps.redis.run = async (script, scriptKeys, args) => {
      const reply = await original(script, scriptKeys, args);
      if (!windDown && script.name === "register-bucket" && scriptKeys[0] === keys.workers(bucketOfA)) {
        windDown = await world.nodes[1].call("POST", "/registry/wind_down", {
          token: world.operatorToken,
          body: { namespace: NS, deadline: null },
        });
      }
      return reply;
    };
    let second: { sessionId: string; duplicates?: unknown };
    try {
      second = await register(1, { prevSessionId: first.sessionId, instances: { [NS]: ["a"] } });
    } finally {
      node.deps.redis.run = original;
    }
    expect(second.duplicates).toBeUndefined();
    expect({ status: windDown!.status, body: await windDown!.json() }).toEqual({ status: 200, body: { queued: 1 } });
    const raw = await world.admin.hget(keys.placements(bucketOfA, "*", NS), "a");
    expect(raw!.split("\n").slice(0, 2)).toEqual([second.sessionId, placed.epoch]);
  });

  it("a drain racing the client's re-register applies to the new session instead of answering 403", async () => {
    const first = await register(2);
    const node = world.nodes[1];
    const original = node.deps.redis.hget.bind(node.deps.redis);
    let raced = false;
    // Interleave deterministically: the client re-registers right after the drain read the client map.
    node.deps.redis.hget = async (key: string, field: string) => {
      const value = await original(key, field);
      if (!raced && key === keys.clientOwners) {
        raced = true;
        await register(2, { prevSessionId: first.sessionId });
      }
      return value;
    };
    try {
      const res = await node.call("POST", "/registry/drain", {
        token: world.operatorToken,
        body: { clientId: clientIdOf(2), deadline: null },
      });
      expect(raced).toBe(true);
      expect({ status: res.status, body: await res.json() }).toEqual({ status: 200, body: { drained: true } });
      const owner = (await world.admin.hget(keys.clientOwners, clientIdOf(2)))!;
      const current = owner.slice(owner.indexOf("\n") + 1);
      expect(current).not.toBe(first.sessionId);
      expect(JSON.parse((await world.admin.hget(keys.sessions, current))!).draining).toBe(true);
    } finally {
      node.deps.redis.hget = original;
    }
  });

  // seen once by the random search as "tag by a session without a record: expected 409, got 200
  // {tagged:false}": a tag (or release) read the session's record, then the worker re-registered
  // and reclaimed the row for its new session (dropping the old record), then the tag's
  // compare-and-set missed. No serial order answers that: before the re-register the tag hits,
  // after it the session has no record (409). Fixed in release.ts: a miss re-reads the record.
  for (const route of ["tag", "release"] as const) {
    it(`a ${route} racing its worker's re-register that reclaims the row answers as one of the two orders`, async () => {
      await world.flush();
      await endColdStart(world);
      const first = await register(0);
      const placed = await resolveOn(0, "a");
      expect(placed.sessionId).toBe(first.sessionId);
      const node = world.nodes[1];
      const redis = node.deps.redis;
      const originals = { run: redis.run.bind(redis), runMany: redis.runMany.bind(redis) };
      let second: { sessionId: string } | undefined;
      // Interleave deterministically: the re-register (reclaiming "a") runs after the route read
      // the session's record and before its compare-and-set.
      const race = async (name: string) => {
        if (second || name !== (route === "tag" ? "tag-row" : "release-row")) return;
        second = await register(0, { prevSessionId: first.sessionId, instances: { [NS]: ["a"] } });
      };
      redis.run = async (script, keyList, args) => {
        await race(script.name);
        return originals.run(script, keyList, args);
      };
      redis.runMany = async (calls) => {
        await race(calls[0]?.script.name ?? "");
        return originals.runMany(calls);
      };
      let res: Response;
      try {
        const row = { sessionId: first.sessionId, namespace: NS, id: "a", epoch: placed.epoch };
        res = await node.call("POST", `/registry/${route}`, {
          token: world.workerToken,
          body: route === "tag" ? { ...row, tag: "t1" } : [row],
        });
      } finally {
        redis.run = originals.run;
        redis.runMany = originals.runMany;
      }
      expect(second).toBeDefined();
      expect({ status: res.status, body: await res.json() }).toEqual({
        status: 409,
        body: { error: "unknown session", reregister: true },
      });
      // The row went to the new session at its epoch, untagged and unreleased.
      const raw = await world.admin.hget(keys.placements(world.bucketOf.get("a")!, "*", NS), "a");
      expect(raw?.split("\n")).toEqual([second!.sessionId, placed.epoch, "", "", ""]);
    });
  }

  it("a cordon applied while the worker's heartbeat is in flight is not undone in the bucket mirrors", async () => {
    const { sessionId } = await register(0);
    const node = world.nodes[0];
    const original = node.deps.redis.runMany.bind(node.deps.redis);
    let raced = false;
    // Interleave deterministically: the operator's drain runs between the heartbeat's fleet-wide
    // script (which read "not drained") and its bucket mirrors.
    node.deps.redis.runMany = async (calls) => {
      if (!raced && calls[0]?.script.name === "heartbeat-bucket") {
        raced = true;
        const res = await world.nodes[1].call("POST", "/registry/drain", {
          token: world.operatorToken,
          body: { clientId: clientIdOf(0), deadline: null },
        });
        expect(res.status).toBe(200);
      }
      return original(calls);
    };
    try {
      const hb = await node.call("POST", "/registry/heartbeat", {
        token: world.workerToken,
        body: heartbeatBody(world.workers[0]!, sessionId),
      });
      expect(hb.status).toBe(200);
      expect(raced).toBe(true);
    } finally {
      node.deps.redis.runMany = original;
    }
    const ws = await readWorld(world);
    expect(ws.records.get(sessionId)!.draining).toBe(true);
    for (const b of keys.allBuckets()) {
      expect(ws.mirrors.get(b)!.get(sessionId)!.draining, `bucket ${b} mirror`).toBe(true);
      expect(ws.lists.get(b)![sessionId]!.split("\n")[2], `bucket ${b} list flags`).toBe("d");
    }
    // The cordoned worker is the only one: no new placement may land on it.
    await expect(resolveOn(0, "c")).rejects.toMatchObject({ outcome: "no-backends" });
  });

  it("a cordon applied to a registration before its bucket mirrors are written is not undone by them", async () => {
    const first = await register(1);
    const node = world.nodes[0];
    const original = node.deps.redis.run.bind(node.deps.redis);
    let raced: Promise<void> | undefined;
    // Interleave deterministically: the re-register's fleet-wide script ran (the client map names
    // the new session, no drain yet), then the operator's drain, then the register's bucket mirrors
    // (each bucket's call waits for the drain).
    node.deps.redis.run = async (script, scriptKeys, args) => {
      if (script.name === "register-bucket") {
        raced ??= world.nodes[1]
          .call("POST", "/registry/drain", {
            token: world.operatorToken,
            body: { clientId: clientIdOf(1), deadline: null },
          })
          .then((res) => {
            expect(res.status).toBe(200);
          });
        await raced;
      }
      return original(script, scriptKeys, args);
    };
    let second: { sessionId: string; draining: boolean };
    try {
      second = await register(1, { prevSessionId: first.sessionId });
      expect(raced).toBeDefined();
    } finally {
      node.deps.redis.run = original;
    }
    expect(second.draining).toBe(false); // registered before the drain
    const ws = await readWorld(world);
    expect(ws.records.get(second.sessionId)!.draining).toBe(true);
    for (const b of keys.allBuckets()) {
      expect(ws.mirrors.get(b)!.get(second.sessionId)?.draining, `bucket ${b} mirror`).toBe(true);
      expect(ws.mirrors.get(b)!.has(first.sessionId), `bucket ${b} mirror of the replaced session`).toBe(false);
      expect(ws.lists.get(b)![second.sessionId]?.split("\n")[2], `bucket ${b} list flags`).toBe("d");
    }
    await expect(resolveOn(1, "c")).rejects.toMatchObject({ outcome: "no-backends" });
  });
});
