/**
 * The model side of the single-activation property test (test/placement/single-activation.property.test.ts).
 *
 * An action (what fast-check generates) is turned into a plan against the model (concrete session
 * ids, epochs and bodies), the plan is executed against the real world (activation-world.ts), and
 * `step` replays the plan on the model with what the world answered: it predicts every answer it
 * can, checks the invariants, and throws `Violation` on a broken invariant or `Mismatch` when the
 * world did something the spec does not allow. After every step `compareWorld` checks that Redis
 * holds exactly what the model says (rows, records, mirrors, namespace lists, client map).
 */

import { Refusal } from "../../src/placement/refusal.ts";
import { resolvePlacement } from "../../src/placement/resolver.ts";
import {
  clientIdOf,
  endColdStart,
  IDS,
  keys,
  LEASE,
  NS,
  redisNow,
  setDrainDeadline,
  setRowExpiry,
  setSessionExpiry,
  UNKNOWN_SESSION,
  type World,
  type WorldState,
} from "./activation-world.ts";
import { heartbeatBody, registerBody } from "./registration.ts";

// ── actions ────────────────────────────────────────────────────────────────────────────────

export type EpochPick = "row" | "older" | "newer" | "empty" | "other";
export type Who = "owner" | number;

export type ApiAction =
  | {
      k: "register";
      w: number;
      node: number;
      prev: "own" | "none" | "other";
      pick: number;
      instances: "held" | "none" | "random";
      ids: number[];
      draining: boolean;
    }
  | { k: "heartbeat"; w: number; node: number; probe: "pass" | "fail" | "mismatch"; draining: boolean }
  | { k: "resolve"; id: number; node: 0 | 1 | "both"; exclude: number | null }
  | { k: "release"; id: number; node: number; who: Who; epoch: EpochPick }
  | { k: "tag"; id: number; node: number; who: Who; epoch: EpochPick; tag: string }
  | { k: "windDown"; id: number | null; deadline: number | null }
  | { k: "drain"; w: number; deadline: number | null }
  | { k: "undrain"; w: number }
  | { k: "deregister"; w: number; node: number };

export type ClockAction =
  | { k: "expire"; w: number; long: boolean }
  | { k: "windDownPasses"; id: number }
  | { k: "drainPasses"; w: number }
  | { k: "restart"; how: "flush" | "restart"; ageBoot: boolean }
  | { k: "endColdStart" };

export type Action = ApiAction | ClockAction | { k: "pair"; a: ApiAction; b: ApiAction };

// ── the model ──────────────────────────────────────────────────────────────────────────────

export interface SessionM {
  sid: string;
  w: number;
  /** live: record and mirrors with expiry > now; dead: record with expiry ≤ now; gone: no record. */
  state: "live" | "dead" | "gone";
  /** Dead for longer than a lease (prunable). */
  long: boolean;
  selfDraining: boolean;
  draining: boolean;
  degraded: boolean;
}

export interface ClientM {
  /** The session the fleet-wide client map names (null once dropped). */
  current: string | null;
  /** The last session this worker registered (what it heartbeats and deregisters with). */
  last: string | null;
  drain: null | "cordon" | "timed" | "passed";
}

export interface RowM {
  sid: string;
  epoch: string;
  /** Wind-down expiry: "" none, digits, or "?" (a future deadline, learnt at the next compare). */
  expiry: string;
  /** The wind-down deadline has passed: the row counts as free. */
  passed: boolean;
  tag: string;
}

export interface Model {
  sessions: Record<string, SessionM>;
  clients: ClientM[];
  rows: Record<string, RowM>;
  /** Every bucket's cold-start quarantine is over. */
  aged: boolean;
  /** Per worker: id → epoch of the activation it holds in memory (what it offers on re-register). */
  held: Array<Record<string, string>>;
  /** bucket → highest epoch ever minted there (kept across runs and Redis restarts). */
  maxEpoch: Record<number, string>;
  /** `${id}@${epoch}` → the worker that holds that activation. One worker per (id, epoch), ever. */
  epochOwner: Record<string, number>;
}

export function emptyModel(workers: number, carry?: Pick<Model, "maxEpoch" | "epochOwner">): Model {
  return {
    sessions: {},
    clients: Array.from({ length: workers }, () => ({ current: null, last: null, drain: null })),
    rows: {},
    aged: false,
    held: Array.from({ length: workers }, () => ({})),
    maxEpoch: { ...(carry?.maxEpoch ?? {}) },
    epochOwner: { ...(carry?.epochOwner ?? {}) },
  };
}

/** A broken invariant of issue 7 (a), (b) or (c). */
export class Violation extends Error {
  override name = "Violation";
}
/** The world answered something the spec (as modelled) does not allow. */
export class Mismatch extends Error {
  override name = "Mismatch";
}

function mismatch(what: string, expected: unknown, actual: unknown): never {
  throw new Mismatch(`${what}: expected ${JSON.stringify(expected)}, got ${JSON.stringify(actual)}`);
}
const expectEq = (what: string, expected: unknown, actual: unknown) => {
  if (JSON.stringify(expected) !== JSON.stringify(actual)) mismatch(what, expected, actual);
};

// ── plans ──────────────────────────────────────────────────────────────────────────────────

export type Plan =
  | { k: "register"; w: number; node: number; prev: string; offered: string[]; draining: boolean }
  | { k: "heartbeat"; w: number; node: number; sid: string; probe: "pass" | "fail" | "mismatch"; draining: boolean }
  | { k: "resolve"; id: string; nodes: number[]; exclude: string }
  | { k: "release"; id: string; node: number; who: string; epoch: string }
  | { k: "tag"; id: string; node: number; who: string; epoch: string; tag: string }
  | { k: "windDown"; id: string | null; deadline: number | null }
  | { k: "drain"; w: number; deadline: number | null }
  | { k: "undrain"; w: number }
  | { k: "deregister"; w: number; node: number; sid: string }
  | { k: "expire"; w: number; sid: string | null; long: boolean }
  | { k: "windDownPasses"; id: string; apply: boolean }
  | { k: "drainPasses"; w: number; apply: boolean; sid: string | null; long: boolean }
  | { k: "restart"; how: "flush" | "restart"; ageBoot: boolean }
  | { k: "endColdStart" };

function olderEpoch(m: Model, id: string, than: string | undefined): string {
  const mine = Object.keys(m.epochOwner)
    .filter((k) => k.startsWith(`${id}@`))
    .map((k) => BigInt(k.slice(id.length + 1)))
    .filter((e) => than === undefined || e < BigInt(than))
    .sort((a, b) => (a < b ? 1 : a > b ? -1 : 0));
  if (mine.length) return mine[0]!.toString();
  return than && BigInt(than) > 0n ? (BigInt(than) - 1n).toString() : "1";
}

function pickEpoch(m: Model, id: string, pick: EpochPick): string {
  const row = m.rows[id];
  switch (pick) {
    case "row":
      return row?.epoch ?? olderEpoch(m, id, undefined);
    case "older":
      return olderEpoch(m, id, row?.epoch);
    case "newer":
      return row ? (BigInt(row.epoch) + 1n).toString() : "99";
    case "empty":
      return "";
    case "other": {
      const others = Object.entries(m.rows).filter(([other]) => other !== id);
      return others.length ? others[0]![1].epoch : "12345";
    }
  }
}

function pickSession(m: Model, id: string, who: Who): string {
  const row = m.rows[id];
  if (who === "owner" && row) return row.sid;
  // Sessions still on record twice over (release and tag then get past the 409), then gone ones, then one never seen.
  const present = Object.values(m.sessions)
    .filter((s) => s.state !== "gone")
    .map((s) => s.sid);
  const gone = Object.values(m.sessions)
    .filter((s) => s.state === "gone")
    .map((s) => s.sid);
  const pool = [...present, ...present, ...gone, UNKNOWN_SESSION];
  const n = who === "owner" ? 0 : who;
  return pool[n % pool.length]!;
}

export function plan(m: Model, a: ApiAction | ClockAction): Plan {
  switch (a.k) {
    case "register": {
      const own = m.clients[a.w]!.last ?? "";
      let prev = "";
      if (a.prev === "own") prev = own;
      if (a.prev === "other") {
        // Another client's session still on record (not prunable): the reclaim must refuse it.
        const others = Object.values(m.sessions).filter((s) => s.w !== a.w && s.state !== "gone" && !s.long);
        prev = others.length ? others[a.pick % others.length]!.sid : own;
      }
      let offered: string[] = [];
      if (a.instances === "held") offered = Object.keys(m.held[a.w]!).sort();
      if (a.instances === "random") offered = [...new Set(a.ids.map((i) => IDS[i]!))].sort();
      return { k: "register", w: a.w, node: a.node, prev, offered, draining: a.draining };
    }
    case "heartbeat":
      return {
        k: "heartbeat",
        w: a.w,
        node: a.node,
        sid: m.clients[a.w]!.last ?? UNKNOWN_SESSION,
        probe: a.probe,
        draining: a.draining,
      };
    case "resolve": {
      const exclude = a.exclude === null ? "" : (m.clients[a.exclude]!.last ?? "");
      return { k: "resolve", id: IDS[a.id]!, nodes: a.node === "both" ? [0, 1] : [a.node], exclude };
    }
    case "release":
    case "tag": {
      // Aimed at the row's owner or epoch, the action goes to a placed id when the named one has no row.
      const placed = IDS.filter((x) => m.rows[x]);
      const aimed = a.who === "owner" || a.epoch === "row";
      const id = m.rows[IDS[a.id]!] || !aimed || placed.length === 0 ? IDS[a.id]! : placed[a.id % placed.length]!;
      const who = pickSession(m, id, a.who);
      const epoch = pickEpoch(m, id, a.epoch);
      if (a.k === "tag") return { k: "tag", id, node: a.node, who, epoch: epoch === "" ? "0" : epoch, tag: a.tag };
      return { k: "release", id, node: a.node, who, epoch };
    }
    case "windDown":
      return { k: "windDown", id: a.id === null ? null : IDS[a.id]!, deadline: a.deadline };
    case "drain":
      return { k: "drain", w: a.w, deadline: a.deadline };
    case "undrain":
      return { k: "undrain", w: a.w };
    case "deregister":
      return { k: "deregister", w: a.w, node: a.node, sid: m.clients[a.w]!.last ?? UNKNOWN_SESSION };
    case "expire": {
      const sid = m.clients[a.w]!.last;
      const s = sid ? m.sessions[sid] : undefined;
      return { k: "expire", w: a.w, sid: s && s.state !== "gone" ? s.sid : null, long: a.long || !!s?.long };
    }
    case "windDownPasses": {
      // The named id, or else the first row that has a wind-down to pass.
      const stamped = IDS.filter((x) => m.rows[x] && m.rows[x]!.expiry !== "");
      const id = stamped.includes(IDS[a.id]!) || stamped.length === 0 ? IDS[a.id]! : stamped[0]!;
      const row = m.rows[id];
      return { k: "windDownPasses", id, apply: !!row && row.expiry !== "" };
    }
    case "drainPasses": {
      const c = m.clients[a.w]!;
      const s = c.current ? m.sessions[c.current] : undefined;
      return {
        k: "drainPasses",
        w: a.w,
        apply: c.drain === "timed",
        sid: s && s.state !== "gone" ? s.sid : null,
        long: !!s?.long,
      };
    }
    case "restart":
      return { k: "restart", how: a.how, ageBoot: a.ageBoot };
    case "endColdStart":
      return { k: "endColdStart" };
  }
}

// ── execution ──────────────────────────────────────────────────────────────────────────────

export type ResolveResult =
  | { node: number; ok: true; sessionId: string; epoch: string; fresh: boolean; advertiseUrl: string; secret: string }
  | { node: number; ok: false; outcome: string };

export type Obs =
  /** An HTTP answer; `body` is its JSON (every registry answer is an object), or its text if it was none. */
  | { k: "http"; status: number; body: Record<string, unknown> }
  | { k: "resolve"; results: ResolveResult[] }
  | { k: "clock"; value: string | null }
  | { k: "none" };

async function http(
  world: World,
  node: number,
  method: string,
  path: string,
  token: string,
  body: unknown,
): Promise<Obs> {
  const res = await world.nodes[node]!.call(method, path, { token, body });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // keep the text
  }
  return { k: "http", status: res.status, body: parsed as Record<string, unknown> };
}

async function resolveOn(world: World, node: number, id: string, exclude: string): Promise<ResolveResult> {
  try {
    const r = await resolvePlacement(world.nodes[node]!.deps, {
      ns: NS,
      id,
      env: "*",
      hostname: "",
      takeover: "",
      ...(exclude ? { exclude } : {}),
    });
    return {
      node,
      ok: true,
      sessionId: r.sessionId,
      epoch: r.epoch,
      fresh: r.fresh,
      advertiseUrl: r.advertiseUrl,
      secret: r.secret,
    };
  } catch (err) {
    if (err instanceof Refusal) return { node, ok: false, outcome: err.outcome };
    throw err;
  }
}

export async function exec(world: World, p: Plan): Promise<Obs> {
  const wt = world.workerToken;
  switch (p.k) {
    case "register": {
      const body = registerBody(world.workers[p.w]!, {
        clientId: clientIdOf(p.w),
        namespaces: [NS],
        draining: p.draining,
        ...(p.prev ? { prevSessionId: p.prev } : {}),
        ...(p.offered.length ? { instances: { [NS]: p.offered } } : {}),
      });
      return http(world, p.node, "POST", "/registry/register", wt, body);
    }
    case "heartbeat": {
      const worker = world.workers[p.w]!;
      const body = heartbeatBody(worker, p.sid, { draining: p.draining });
      // A failing probe: a challenge the worker does not know (404). A mismatch: the worker
      // answers another value than the one quoted. Per request, so a concurrent register of the
      // same worker still passes its probe.
      if (p.probe === "fail") body.challenge = `unknown-${Math.random()}`;
      if (p.probe === "mismatch") body.challengeValue = `${String(body.challengeValue)}-not-mine`;
      return http(world, p.node, "POST", "/registry/heartbeat", wt, body);
    }
    case "resolve":
      return { k: "resolve", results: await Promise.all(p.nodes.map((n) => resolveOn(world, n, p.id, p.exclude))) };
    case "release":
      return http(world, p.node, "POST", "/registry/release", wt, [
        { sessionId: p.who, namespace: NS, id: p.id, epoch: p.epoch },
      ]);
    case "tag":
      return http(world, p.node, "POST", "/registry/tag", wt, {
        sessionId: p.who,
        namespace: NS,
        id: p.id,
        epoch: p.epoch,
        tag: p.tag,
      });
    case "windDown":
      return http(world, 0, "POST", "/registry/wind_down", world.operatorToken, {
        namespace: NS,
        ...(p.id !== null ? { id: p.id } : {}),
        deadline: p.deadline,
      });
    case "drain":
      return http(world, 1, "POST", "/registry/drain", world.operatorToken, {
        clientId: clientIdOf(p.w),
        deadline: p.deadline,
      });
    case "undrain":
      return http(world, 0, "POST", "/registry/undrain", world.operatorToken, { clientId: clientIdOf(p.w) });
    case "deregister":
      return http(world, p.node, "POST", "/registry/deregister", wt, { sessionId: p.sid });
    case "expire": {
      if (!p.sid) return { k: "none" };
      const now = await redisNow(world);
      await setSessionExpiry(world, p.sid, p.long ? now - LEASE - 1000 : now - 1);
      return { k: "none" };
    }
    case "windDownPasses": {
      if (!p.apply) return { k: "clock", value: null };
      const value = String((await redisNow(world)) - 1);
      return { k: "clock", value: (await setRowExpiry(world, p.id, value)) ? value : null };
    }
    case "drainPasses": {
      if (!p.apply) return { k: "none" };
      const now = await redisNow(world);
      await setDrainDeadline(world, clientIdOf(p.w), now - 1);
      // Every record of a drained client is bounded by the deadline: its lease ends with it.
      if (p.sid) await setSessionExpiry(world, p.sid, p.long ? now - LEASE - 1000 : now - 1);
      return { k: "none" };
    }
    case "restart":
      if (p.how === "flush") await world.flush();
      else await world.restart();
      if (p.ageBoot) await endColdStart(world);
      return { k: "none" };
    case "endColdStart":
      await endColdStart(world);
      return { k: "none" };
  }
}

// ── the model's step ───────────────────────────────────────────────────────────────────────

export interface StepContext {
  bucketOf: Map<string, number>;
  workerUrls: string[];
  workerSecrets: string[];
  /** The workers' account as Redis holds it: its tag under the nodes' key (auth/account-tags.ts). */
  accountTag: string;
}

const http$ = (o: Obs, what: string): { status: number; body: Record<string, unknown> } => {
  if (o.k !== "http") throw new Error(`${what}: not an HTTP observation`);
  return o;
};

function drop(m: Model, sid: string) {
  const s = m.sessions[sid];
  if (!s) return;
  s.state = "gone";
  const c = m.clients[s.w]!;
  if (c.current === sid) c.current = null;
}

const UNKNOWN = { error: "unknown session", reregister: true };

/** What the steps exercised (printed by the test, to show the search reaches the interesting states). */
export const stats: Record<string, number> = {};
export const count = (what: string) => void (stats[what] = (stats[what] ?? 0) + 1);

export function step(m: Model, p: Plan, o: Obs, ctx: StepContext): void {
  switch (p.k) {
    case "register": {
      const { status, body } = http$(o, "register");
      if (status !== 200) mismatch("register status", 200, { status, body });
      const sid = body.sessionId as string;
      // register-session prunes sessions dead for longer than a lease, then replaces the client's current one.
      for (const s of Object.values(m.sessions)) if (s.state === "dead" && s.long) drop(m, s.sid);
      const c = m.clients[p.w]!;
      if (c.current) m.sessions[c.current]!.state = "gone";
      const draining = p.draining || c.drain !== null;
      m.sessions[sid] = {
        sid,
        w: p.w,
        // A timed drain whose deadline passed bounds the new lease by it: the session is born dead.
        state: c.drain === "passed" ? "dead" : "live",
        long: false,
        selfDraining: p.draining,
        draining,
        degraded: false,
      };
      expectEq("register draining", draining, body.draining);
      expectEq("register expiresInMs", LEASE, body.expiresInMs);
      expectEq("register drainDeadline present", c.drain === "timed" || c.drain === "passed", "drainDeadline" in body);
      // prevSessionId reclaims only for this client: a session of another client still on record
      // reclaims nothing (one gone from the record cannot be checked; see the reproductions).
      const prevRec = p.prev ? m.sessions[p.prev] : undefined;
      const prevAllowed = !(prevRec && prevRec.state !== "gone" && prevRec.w !== p.w);
      if (!prevAllowed) count("register: prevSessionId of another client refused");
      const dups: string[] = [];
      for (const id of p.offered) {
        const row = m.rows[id];
        if (p.prev && prevAllowed && row && row.sid === p.prev) {
          const holder = m.epochOwner[`${id}@${row.epoch}`];
          if (holder !== p.w) {
            throw new Violation(
              `(a) register of worker ${p.w} reclaimed ${id} at epoch ${row.epoch} from session ${p.prev} of worker ${holder} ` +
                `(state ${m.sessions[p.prev]?.state ?? "unknown"}): two workers now hold one activation at one epoch`,
            );
          }
          count(
            p.prev === m.clients[p.w]!.last || m.sessions[p.prev]?.w === p.w
              ? "register: reclaim"
              : "register: reclaim from another worker",
          );
          row.sid = sid;
          m.held[p.w]![id] = row.epoch;
        } else {
          dups.push(id);
        }
      }
      const got = ((body.duplicates ?? []) as Array<{ ns: string; id: string }>).map((d) => `${d.ns}:${d.id}`).sort();
      expectEq("register duplicates", dups.map((id) => `${NS}:${id}`).sort(), got);
      for (const id of dups) delete m.held[p.w]![id];
      c.current = sid;
      c.last = sid;
      return;
    }
    case "heartbeat": {
      const { status, body } = http$(o, "heartbeat");
      const s = m.sessions[p.sid];
      count(`heartbeat: ${s?.state ?? "unknown"} ${p.probe}`);
      if (s?.state !== "live") {
        expectEq("heartbeat of a session that is not live", { status: 409, body: UNKNOWN }, { status, body });
        return;
      }
      if (p.probe === "mismatch") {
        expectEq(
          "heartbeat with a mismatched probe",
          {
            status: 409,
            body: { error: "registration voided: challenge value mismatch on the advertise URL", reregister: true },
          },
          { status, body },
        );
        drop(m, p.sid);
        return;
      }
      if (status !== 200) mismatch("heartbeat status", 200, { status, body });
      const c = m.clients[s.w]!;
      s.selfDraining = p.draining;
      s.draining = p.draining || c.drain !== null;
      s.degraded = p.probe === "fail";
      if (c.drain === "passed") s.state = "dead";
      expectEq("heartbeat draining", s.draining, body.draining);
      expectEq("heartbeat degraded", s.degraded ? true : undefined, body.degraded);
      expectEq("heartbeat drainDeadline present", c.drain === "timed" || c.drain === "passed", "drainDeadline" in body);
      return;
    }
    case "resolve":
      stepResolve(m, p, o, ctx);
      return;
    case "release":
    case "tag": {
      const { status, body } = http$(o, p.k);
      const s = m.sessions[p.who];
      if (!s || s.state === "gone") {
        count(`${p.k}: session without a record`);
        expectEq(`${p.k} by a session without a record`, { status: 409, body: UNKNOWN }, { status, body });
        return;
      }
      const row = m.rows[p.id];
      const hit = !!row && row.sid === p.who && row.epoch === p.epoch;
      count(
        `${p.k}: ${!row ? "no row" : hit ? "hit" : row.sid === p.who ? "owner, other epoch" : row.epoch === p.epoch ? "other session, row's epoch" : "other session and epoch"}`,
      );
      if (p.k === "release") {
        expectEq("release answer", { status: 200, body: { released: hit ? 1 : 0 } }, { status, body });
        if (hit) {
          delete m.rows[p.id];
          if (m.held[s.w]![p.id] === p.epoch) delete m.held[s.w]![p.id];
        }
      } else {
        expectEq("tag answer", { status: 200, body: { tagged: hit } }, { status, body });
        if (hit) row!.tag = p.tag;
      }
      return;
    }
    case "windDown": {
      const { status, body } = http$(o, "wind_down");
      const stamp = (row: RowM) => {
        row.expiry = p.deadline === null ? "" : "?";
        row.passed = false;
      };
      // Every row is stamped; only a live owner whose fence had not passed is told, and counted.
      const told = (row: RowM) => m.sessions[row.sid]?.state === "live" && !row.passed;
      if (p.id !== null) {
        const row = m.rows[p.id];
        expectEq("wind_down answer", { status: 200, body: { queued: !!row && told(row) } }, { status, body });
        if (row) stamp(row);
      } else {
        const rows = Object.values(m.rows);
        expectEq("wind_down answer", { status: 200, body: { queued: rows.filter(told).length } }, { status, body });
        rows.forEach(stamp);
      }
      return;
    }
    case "drain":
    case "undrain": {
      const { status, body } = http$(o, p.k);
      const c = m.clients[p.w]!;
      if (!c.current) {
        expectEq(
          `${p.k} of a client without a current record`,
          { status: 403, body: { error: "forbidden" } },
          { status, body },
        );
        return;
      }
      const s = m.sessions[c.current]!;
      if (p.k === "drain") {
        expectEq("drain answer", { status: 200, body: { drained: true } }, { status, body });
        c.drain = p.deadline === null ? "cordon" : "timed";
        s.draining = true;
      } else {
        expectEq("undrain answer", { status: 200, body: { revoked: c.drain !== null } }, { status, body });
        c.drain = null;
        s.draining = s.selfDraining;
      }
      return;
    }
    case "deregister": {
      const { status, body } = http$(o, "deregister");
      const s = m.sessions[p.sid];
      if (s?.state !== "live") {
        expectEq("deregister of a session that is not live", { status: 409, body: UNKNOWN }, { status, body });
        return;
      }
      expectEq("deregister answer", { status: 200, body: {} }, { status, body });
      drop(m, p.sid);
      return;
    }
    case "expire": {
      if (!p.sid) return;
      count(`clock: lease expiry${p.long ? " (past pruning)" : ""}`);
      const s = m.sessions[p.sid]!;
      s.state = "dead";
      s.long = p.long;
      return;
    }
    case "windDownPasses": {
      if (!p.apply) return;
      if (o.k !== "clock" || o.value === null) mismatch("windDownPasses", "a row to rewrite", o);
      const row = m.rows[p.id]!;
      row.expiry = o.value;
      row.passed = true;
      return;
    }
    case "drainPasses": {
      if (!p.apply) return;
      count("clock: drain deadline");
      m.clients[p.w]!.drain = "passed";
      if (p.sid) {
        const s = m.sessions[p.sid]!;
        s.state = "dead";
        s.long = p.long;
      }
      return;
    }
    case "restart":
      count(`redis: ${p.how}${p.ageBoot ? "" : " (cold start)"}`);
      for (const sid of Object.keys(m.sessions)) m.sessions[sid]!.state = "gone";
      for (const c of m.clients) {
        c.current = null;
        c.drain = null;
      }
      m.rows = {};
      m.aged = p.ageBoot;
      return;
    case "endColdStart":
      m.aged = true;
      return;
  }
}

type Prediction =
  | { kind: "forward"; sid: string; epoch: string }
  | { kind: "place"; candidates: Set<string>; keep: string }
  | { kind: "refuse"; outcomes: Set<string> };

function predictResolve(m: Model, id: string, exclude: string): Prediction {
  const row = m.rows[id];
  if (row && !row.passed && row.epoch !== "" && m.sessions[row.sid]?.state === "live") {
    return { kind: "forward", sid: row.sid, epoch: row.epoch };
  }
  const candidates = new Set(
    Object.values(m.sessions)
      .filter((s) => s.state === "live" && !s.draining && !s.degraded && s.sid !== exclude)
      .map((s) => s.sid),
  );
  // Whether the bucket still has a namespace list (dead entries keep it) is not modelled:
  // without a live candidate the answer is unknown-ns or the next refusal in line.
  if (!m.aged)
    return { kind: "refuse", outcomes: new Set(candidates.size ? ["quarantine"] : ["quarantine", "unknown-ns"]) };
  if (candidates.size === 0) return { kind: "refuse", outcomes: new Set(["no-backends", "unknown-ns"]) };
  return { kind: "place", candidates, keep: row && row.expiry !== "" && !row.passed ? row.expiry : "" };
}

function stepResolve(m: Model, p: Extract<Plan, { k: "resolve" }>, o: Obs, ctx: StepContext): void {
  if (o.k !== "resolve") throw new Error("resolve: not a resolve observation");
  const results = o.results;
  const bucket = ctx.bucketOf.get(p.id)!;
  // (a) Two nodes resolving one id at the same moment name the same owner at the same epoch.
  if (results.length === 2) {
    const [x, y] = results as [ResolveResult, ResolveResult];
    // Two refusals may differ: the first resolve prunes dead list entries, which can take the
    // namespace list with them (no-backends, then unknown-ns). Two owners may not.
    const view = (r: ResolveResult) => (r.ok ? `${r.sessionId}@${r.epoch}` : "refused");
    if (view(x) !== view(y)) {
      const full = (r: ResolveResult) => (r.ok ? `${r.sessionId}@${r.epoch}` : `refused ${r.outcome}`);
      throw new Violation(
        `(a) nodes disagree on the owner of ${p.id}: node ${x.node} ${full(x)}, node ${y.node} ${full(y)}`,
      );
    }
    if (x.ok && y.ok && x.fresh && y.fresh) throw new Violation(`(a) both nodes minted ${p.id} at ${x.epoch}`);
  }
  const prediction = predictResolve(m, p.id, p.exclude);
  count(
    `resolve: ${prediction.kind}${results.length === 2 ? " (both nodes)" : ""}${m.rows[p.id]?.passed ? " after wind-down" : ""}`,
  );
  const first = results.find((r) => r.ok && r.fresh) ?? results[0]!;
  for (const r of results) {
    if (!r.ok) {
      if (prediction.kind !== "refuse" || !prediction.outcomes.has(r.outcome)) {
        mismatch(`resolve ${p.id} (node ${r.node})`, describe(prediction), `refused ${r.outcome}`);
      }
      continue;
    }
    const s = m.sessions[r.sessionId];
    if (!s) mismatch(`resolve ${p.id}`, describe(prediction), `a session the model never saw: ${r.sessionId}`);
    expectEq(`resolve ${p.id} advertiseUrl`, ctx.workerUrls[s!.w], r.advertiseUrl);
    expectEq(`resolve ${p.id} secret`, ctx.workerSecrets[s!.w], r.secret);
    if (prediction.kind === "forward") {
      // A live owner whose wind-down has not passed keeps its row: no second owner, no new epoch.
      if (r.sessionId !== prediction.sid || r.epoch !== prediction.epoch || r.fresh) {
        throw new Violation(
          `(a) ${p.id} is held by live session ${prediction.sid} at ${prediction.epoch}, ` +
            `but node ${r.node} answered ${r.sessionId} at ${r.epoch}${r.fresh ? " (freshly minted)" : ""}`,
        );
      }
    } else if (prediction.kind === "place") {
      if (r !== first) {
        // The second of two concurrent resolves forwards to what the first one placed.
        const f = first as Extract<ResolveResult, { ok: true }>;
        if (r.fresh || r.sessionId !== f.sessionId || r.epoch !== f.epoch)
          mismatch(`second resolve of ${p.id}`, `${f.sessionId}@${f.epoch}`, r);
        continue;
      }
      if (!r.fresh) mismatch(`resolve ${p.id}`, "a fresh placement", r);
      if (!prediction.candidates.has(r.sessionId)) {
        throw new Violation(
          `(a) ${p.id} placed on ${r.sessionId}, which is not an eligible live worker (${[...prediction.candidates].join(", ")})`,
        );
      }
    } else {
      mismatch(`resolve ${p.id} (node ${r.node})`, describe(prediction), `${r.sessionId}@${r.epoch}`);
    }
  }
  if (!first.ok) return;
  const w = m.sessions[first.sessionId]!.w;
  const key = `${p.id}@${first.epoch}`;
  if (prediction.kind === "place") {
    // (b) A minted epoch exceeds every epoch minted before in the bucket, across Redis restarts.
    const max = m.maxEpoch[bucket];
    if (max !== undefined && BigInt(first.epoch) <= BigInt(max)) {
      throw new Violation(
        `(b) bucket ${bucket} minted ${first.epoch} for ${p.id}, not above the previous maximum ${max}`,
      );
    }
    if (m.epochOwner[key] !== undefined) throw new Violation(`(b) epoch ${first.epoch} of ${p.id} minted twice`);
    m.maxEpoch[bucket] = first.epoch;
    m.epochOwner[key] = w;
    m.rows[p.id] = { sid: first.sessionId, epoch: first.epoch, expiry: prediction.keep, passed: false, tag: "" };
  } else if (m.epochOwner[key] !== w) {
    throw new Violation(
      `(a) ${p.id}@${first.epoch} served by worker ${w}, but that activation belongs to worker ${m.epochOwner[key]}`,
    );
  }
  m.held[w]![p.id] = first.epoch;
}

function describe(p: Prediction): string {
  if (p.kind === "forward") return `forward to ${p.sid}@${p.epoch}`;
  if (p.kind === "place") return `a fresh placement on one of ${[...p.candidates].join(", ")}`;
  return `a refusal: ${[...p.outcomes].join(" | ")}`;
}

// ── comparing the model with Redis ─────────────────────────────────────────────────────────

/** Checks that Redis holds what the model says; learns "?" wind-down expiries. */
export function compareWorld(m: Model, ws: WorldState, ctx: StepContext): void {
  const now = ws.now;
  for (const s of Object.values(m.sessions)) {
    const rec = ws.records.get(s.sid);
    if (s.state === "gone") {
      if (rec) mismatch(`record of gone session ${s.sid}`, "absent", rec);
      // Deregister, a voided heartbeat and a replacing register remove the bucket copies at once;
      // a session pruned for being dead over a lease leaves them to the lazy pruning of resolve
      // and register. Either way no bucket may see it live.
      for (const [b, mirrors] of ws.mirrors) {
        const mirror = mirrors.get(s.sid);
        if (mirror && mirror.expiry > now)
          mismatch(`bucket ${b} mirror of gone session ${s.sid}`, "absent or dead", mirror);
      }
      for (const [b, list] of ws.lists) {
        const entry = list[s.sid];
        if (entry !== undefined && Number(entry.split("\n")[0]) > now)
          mismatch(`bucket ${b} list entry of gone session ${s.sid}`, "absent or dead", entry);
      }
      continue;
    }
    if (!rec) mismatch(`record of ${s.state} session ${s.sid}`, "present", "absent");
    if (s.state === "live" && !(rec.expiry > now)) mismatch(`expiry of live session ${s.sid}`, `> ${now}`, rec.expiry);
    if (s.state === "dead" && !(rec.expiry <= now))
      mismatch(`expiry of dead session ${s.sid}`, `<= ${now}`, rec.expiry);
    const flags = { selfDraining: s.selfDraining, draining: s.draining, degraded: s.degraded };
    expectEq(`flags of session ${s.sid}`, flags, {
      selfDraining: rec.selfDraining,
      draining: rec.draining,
      degraded: rec.degradedSince != null,
    });
    if (s.state !== "live") continue;
    const listFlags = `${s.draining ? "d" : ""}${s.degraded ? "g" : ""}`;
    for (const [b, mirrors] of ws.mirrors) {
      const mirror = mirrors.get(s.sid);
      if (!mirror || !(mirror.expiry > now))
        mismatch(`bucket ${b} mirror of live session ${s.sid}`, "live", mirror ?? "absent");
      expectEq(
        `bucket ${b} mirror flags of ${s.sid}`,
        { draining: s.draining, degraded: s.degraded },
        { draining: mirror!.draining, degraded: mirror!.degradedSince != null },
      );
      const entry = ws.lists.get(b)![s.sid];
      if (entry === undefined) mismatch(`bucket ${b} list entry of live session ${s.sid}`, "present", "absent");
      const [expiry = "", , f = ""] = entry.split("\n");
      if (!(Number(expiry) > now)) mismatch(`bucket ${b} list expiry of ${s.sid}`, `> ${now}`, expiry);
      expectEq(`bucket ${b} list flags of ${s.sid}`, listFlags, f);
    }
  }
  for (const sid of ws.records.keys()) if (!m.sessions[sid]) mismatch("records", "only sessions the model knows", sid);
  m.clients.forEach((c, w) => {
    expectEq(
      `client map of w${w}`,
      c.current ? `${ctx.accountTag}\n${c.current}` : undefined,
      ws.clientOwners[clientIdOf(w)],
    );
  });
  m.clients.forEach((c, w) => {
    expectEq(`drain of w${w}`, c.drain, drainKind(ws.drains[clientIdOf(w)] ?? null, now));
  });

  if (ws.extraRows.length) mismatch("placement rows", "only the test ids", ws.extraRows);
  for (const id of IDS) {
    const row = m.rows[id];
    const raw = ws.rows.get(id);
    if (!row) {
      if (raw !== undefined) mismatch(`row of ${id}`, "absent", raw);
      continue;
    }
    if (raw === undefined) mismatch(`row of ${id}`, row, "absent");
    const [sid = "", epoch = "", expiry = "", host = "", ...tag] = raw.split("\n");
    if (row.expiry === "?") {
      if (!/^\d+$/.test(expiry) || !(Number(expiry) > now))
        mismatch(`wind-down expiry of ${id}`, `a future deadline`, expiry);
      row.expiry = expiry;
    }
    expectEq(
      `row of ${id}`,
      { sid: row.sid, epoch: row.epoch, expiry: row.expiry, host: "", tag: row.tag },
      { sid, epoch, expiry, host, tag: tag.join("\n") },
    );
    const owner = m.sessions[row.sid];
    const holder = m.epochOwner[`${id}@${row.epoch}`];
    // (a) The row's activation is held by the row owner's worker and nobody else.
    if (!owner || holder !== owner.w)
      throw new Violation(
        `(a) row ${id}@${row.epoch} names ${row.sid} (worker ${owner?.w}), but worker ${holder} holds that activation`,
      );
  }
  void ctx;
  void keys;
}

/** What a client's drain key says, in the model's terms. */
function drainKind(value: string | null, now: number): ClientM["drain"] {
  if (value === null) return null;
  if (value === "cordon") return "cordon";
  return Number(value) > now ? "timed" : "passed";
}
