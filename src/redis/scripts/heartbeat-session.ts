import { defineScript } from "../../contract/lua-script.ts";
import type { Keys } from "../keys.ts";
import type { RedisPort } from "../port.ts";
import { LUA_DROP_SESSION, LUA_EXPIRY_INDEX, LUA_NOW, LUA_PAIR, LUA_RENEW_LEASE } from "./lua-lib.ts";
import { sessionScriptKeys } from "./session-keys.ts";

/**
 * heartbeat-session: the fleet-wide half of POST /registry/heartbeat, atomic in {global}.
 * Renews the lease (bounded by a timed drain) and bumps the record's revision (`rev`, which the
 * bucket mirrors compare), applies the probe outcome, replaces headroom (and marks it with the new
 * revision, `headroomRev`: placements the buckets counted under an older one no longer count),
 * drops acked control messages and peeks the rest. A probe that answered another worker's value
 * voids the registration; a hostname binding moved to another env supersedes it.
 *
 * KEYS[1] sessions            hash sessionId → record JSON
 * KEYS[2] clients             hash clientId → account \n sessionId
 * KEYS[3] queue               hash msgId → message JSON (this session's control queue)
 * KEYS[4] drain               string: the client's drain ("cordon" or deadline ms)
 * KEYS[5] hostname bindings   hash {hostname}{ns} → env \n epoch
 * KEYS[6] generation          counter of registrations (a dropped session's tombstone)
 * KEYS[7] session expiries    zset sessionId → expiry (the index over KEYS[1])
 * ARGV[1] sessionId
 * ARGV[2] clientId the caller read (the drain key is derived from it)
 * ARGV[3] headroom
 * ARGV[4] "1" when the worker reports itself draining
 * ARGV[5] probe outcome: "pass" | "fail" | "mismatch"
 * ARGV[6] lease TTL ms
 * ARGV[7] "1" in hostname-aware mode
 * ARGV[8 …] acked msgIds
 *
 * Returns {"ok", record JSON, drain deadline ms or "", now, {msgId, message JSON, …}}
 *      or {"unknown"} | {"voided", record JSON, generation}
 *      | {"superseded", record JSON, generation, key, env, epoch}.
 */
const LUA = `${LUA_NOW}${LUA_PAIR}${LUA_EXPIRY_INDEX}${LUA_DROP_SESSION}${LUA_RENEW_LEASE}
local now = now_ms()
local lease = tonumber(ARGV[6])
local raw = redis.call('HGET', KEYS[1], ARGV[1])
if not raw then return {'unknown'} end
local rec = cjson.decode(raw)
if rec.expiry <= now or rec.clientId ~= ARGV[2] then return {'unknown'} end

if ARGV[5] == 'mismatch' then
  drop_session(KEYS[1], KEYS[7], KEYS[2], rec)
  redis.call('DEL', KEYS[3])
  return {'voided', raw, tostring(redis.call('INCR', KEYS[6]))}
end

if ARGV[7] == '1' then
  for _, ns in ipairs(rec.namespaces) do
    local env = rec.envs[ns]
    if env == nil or env == cjson.null then env = rec.env end
    local key = rec.hostname .. ns
    local b = redis.call('HGET', KEYS[5], key)
    if b then
      local benv, bepoch = pair(b)
      if benv ~= env then
        drop_session(KEYS[1], KEYS[7], KEYS[2], rec)
        redis.call('DEL', KEYS[3])
        return {'superseded', raw, tostring(redis.call('INCR', KEYS[6])), key, benv, bepoch}
      end
    else
      redis.call('HSET', KEYS[5], key, env .. '\\n' .. rec.bindingEpoch)
    end
  end
end

rec.headroom = tonumber(ARGV[3])
rec.selfDraining = ARGV[4] == '1'
if ARGV[5] == 'pass' then
  rec.degradedSince = nil
elseif rec.degradedSince == nil or rec.degradedSince == cjson.null then
  rec.degradedSince = now
end

local deadline = renew_lease(rec, KEYS[4], now, lease)
rec.rev = (tonumber(rec.rev) or 0) + 1
rec.headroomRev = rec.rev
local encoded = cjson.encode(rec)
index_set(KEYS[1], KEYS[7], ARGV[1], encoded, rec.expiry)

for i = 8, #ARGV do redis.call('HDEL', KEYS[3], ARGV[i]) end
local messages = redis.call('HGETALL', KEYS[3])
if #messages > 0 then redis.call('PEXPIRE', KEYS[3], 2 * lease) end
return {'ok', encoded, deadline, tostring(now), messages}
`;

export const heartbeatSessionScript = defineScript(
  "heartbeat-session",
  LUA,
  "76c6514a9ce9ad6cd5dfed0cf675ba70a8ea911b",
);

export interface HeartbeatSessionInput {
  sessionId: string;
  /** The clientId the caller read (the drain key is the client's). */
  clientId: string;
  headroom: number;
  /** The worker reports itself draining. */
  draining: boolean;
  probe: "pass" | "fail" | "mismatch";
  leaseTtlMs: number;
  hostnameAware: boolean;
  acks: readonly string[];
}

export type HeartbeatSessionResult =
  /** The renewed record's JSON, the drain deadline (ms, "" when none), Redis' now and the flat {msgId, message JSON, …} queue. */
  | { kind: "ok"; json: string; drainDeadline: string; now: number; messages: string[] }
  | { kind: "unknown" }
  /** The dropped record's JSON and the generation its bucket tombstones carry. */
  | { kind: "voided"; json: string; generation: string }
  /** As voided, with the binding that moved: key {hostname}{ns}, its env and epoch. */
  | { kind: "superseded"; json: string; generation: string; key: string; env: string; epoch: string };

export async function heartbeatSession(
  redis: RedisPort,
  keys: Keys,
  input: HeartbeatSessionInput,
): Promise<HeartbeatSessionResult> {
  const { sessionId, clientId } = input;
  const reply = (await redis.run(
    heartbeatSessionScript,
    sessionScriptKeys(keys, "heartbeat-session", { sessionId, clientId }),
    [
      sessionId,
      clientId,
      input.headroom,
      input.draining ? "1" : "0",
      input.probe,
      input.leaseTtlMs,
      input.hostnameAware ? "1" : "0",
      ...input.acks,
    ],
  )) as [string, string?, string?, string?, string[]?, string?];

  const [status, json = "", third = "", fourth = ""] = reply;
  if (status === "unknown") return { kind: "unknown" };
  if (status === "voided") return { kind: "voided", json, generation: third };
  if (status === "superseded") {
    const [, , , key, env, epoch] = reply as string[];
    return { kind: "superseded", json, generation: third, key: String(key), env: String(env), epoch: String(epoch) };
  }
  return { kind: "ok", json, drainDeadline: third, now: Number(fourth), messages: reply[4] ?? [] };
}
