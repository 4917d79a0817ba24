import { defineScript } from "../../contract/lua-script.ts";
import type { Keys } from "../keys.ts";
import type { RedisPort } from "../port.ts";
import { LUA_DROP_SESSION, LUA_EXPIRY_INDEX, LUA_NOW, LUA_PAIR, LUA_PRUNE_FLEET, LUA_RENEW_LEASE } from "./lua-lib.ts";
import { sessionScriptKeys } from "./session-keys.ts";

/**
 * register-session: the fleet-wide half of POST /registry/register, atomic in the {global} slot.
 * Prunes dead sessions (expiry + lease < now) and bindings without a live worker, checks the
 * client's account and the hostname-aware bindings, then writes the record.
 *
 * KEYS[1] sessions            hash sessionId → record JSON
 * KEYS[2] clients             hash clientId → account \n sessionId
 * KEYS[3] hostname bindings   hash {hostname}{ns} → env \n epoch
 * KEYS[4] env bindings        hash env → takeover \n epoch
 * KEYS[5] binding quarantine  hash {hostname}{ns} → quarantined-until ms
 * KEYS[6] drain               string: the client's drain ("cordon" or deadline ms)
 * KEYS[7] generation          counter of registrations, orders bucket mirrors
 * KEYS[8] session expiries    zset sessionId → expiry (the index over KEYS[1])
 * KEYS[9] session owners      hash sessionId → {"a": account, "c": clientId, "d"?: 1}
 * KEYS[10] owner checks       zset sessionId → when (ms) register next looks at the KEYS[9] entry
 * ARGV[1] record JSON: sessionId, clientId, account, hostname, env, envs, namespaces,
 *         takeover, bindingEpoch (digits), selfDraining, …
 * ARGV[2] lease TTL ms
 * ARGV[3] "1" in hostname-aware mode
 * ARGV[4] prevSessionId or ""
 * ARGV[5] owner memory window ms (how long an owner is remembered past its record, at least)
 * ARGV[6] owner memory cap (entries)
 *
 * Returns {"ok", record JSON, drain deadline ms or "", replaced sessionId or "", prevAllowed 0|1 (1 only
 *          when the prevSessionId's record, or once the record is gone its remembered owner, names
 *          this account and client)}
 *      or {"conflict", message}.
 *
 * Owner memory: a reclaim hands rows over at their epoch, so the account that may reclaim a
 * session's rows must be known for as long as rows can name the session, which outlives its
 * record (deregister and pruning drop the record; rows wait for dead-owner eviction). Each
 * register remembers its session's owner and looks at up to 100 entries that fell due: one whose
 * session is still on record is due again a window later; one without a record is marked ("d")
 * and due a window later, when it is forgotten. An owner is thus remembered one to two windows
 * past the moment its record is gone (time without any register does not count). Only register
 * adds entries, so only register needs to forget them; at the cap the entries due soonest make
 * room for the new one. A forgotten owner fails closed: the ids come back in duplicates.
 */
const LUA = `${LUA_NOW}${LUA_PAIR}${LUA_EXPIRY_INDEX}${LUA_DROP_SESSION}${LUA_PRUNE_FLEET}${LUA_RENEW_LEASE}
local now = now_ms()
local rec = cjson.decode(ARGV[1])
local lease = tonumber(ARGV[2])
local aware = ARGV[3] == '1'

local function remember_owner(owners_key, checks_key, sessions_key, r, now, window, cap)
  if redis.call('HLEN', owners_key) ~= redis.call('ZCARD', checks_key) then
    redis.call('DEL', checks_key)
    for _, sid in ipairs(redis.call('HKEYS', owners_key)) do redis.call('ZADD', checks_key, now + window, sid) end
  end
  for _, sid in ipairs(redis.call('ZRANGEBYSCORE', checks_key, '-inf', now, 'LIMIT', 0, 100)) do
    local raw = redis.call('HGET', owners_key, sid)
    local o = raw and cjson.decode(raw)
    if redis.call('HEXISTS', sessions_key, sid) == 1 then
      redis.call('ZADD', checks_key, now + window, sid)
    elseif o and o.d == nil then
      o.d = 1
      redis.call('HSET', owners_key, sid, cjson.encode(o))
      redis.call('ZADD', checks_key, now + window, sid)
    else
      redis.call('HDEL', owners_key, sid)
      redis.call('ZREM', checks_key, sid)
    end
  end
  local over = redis.call('ZCARD', checks_key) - cap + 1
  if over > 0 then
    local popped = redis.call('ZPOPMIN', checks_key, over)
    for i = 1, #popped, 2 do redis.call('HDEL', owners_key, popped[i]) end
  end
  redis.call('HSET', owners_key, r.sessionId, cjson.encode({ a = r.account, c = r.clientId }))
  redis.call('ZADD', checks_key, now + window, r.sessionId)
end

local function env_of(r, ns)
  local e = r.envs[ns]
  if e == nil or e == cjson.null then return r.env end
  return e
end

prune_fleet(KEYS[1], KEYS[8], KEYS[2], KEYS[3], KEYS[4], now, lease, aware)

local replaced = ''
local owner = redis.call('HGET', KEYS[2], rec.clientId)
if owner then
  local account, sid = pair(owner)
  if account ~= rec.account then return {'conflict', 'client belongs to another account'} end
  replaced = sid
end

-- A reclaim hands rows over at their epoch, so prevSessionId must be this client's own previous
-- session, judged on its record or, once that is gone, on its remembered owner. A session of
-- another account or another client, or one whose owner is unknown, reclaims nothing.
local prev_allowed = 0
if ARGV[4] ~= '' then
  local owner
  local prev = redis.call('HGET', KEYS[1], ARGV[4])
  if prev then
    local p = cjson.decode(prev)
    owner = { a = p.account, c = p.clientId }
  else
    local m = redis.call('HGET', KEYS[9], ARGV[4])
    if m then owner = cjson.decode(m) end
  end
  if owner and owner.a == rec.account and owner.c == rec.clientId then prev_allowed = 1 end
end

if aware then
  local epoch = tonumber(rec.bindingEpoch)
  for _, ns in ipairs(rec.namespaces) do
    local key = rec.hostname .. ns
    local b = redis.call('HGET', KEYS[3], key)
    if b then
      local benv, bepoch = pair(b)
      if benv ~= env_of(rec, ns) and epoch <= tonumber(bepoch) then
        return {'conflict', 'hostname ' .. key .. ' is bound to env ' .. benv .. ' at epoch ' .. bepoch ..
          ', not ' .. env_of(rec, ns) .. ' — register with a higher epoch to displace'}
      end
    end
  end
  local seen = {}
  for _, ns in ipairs(rec.namespaces) do
    local env = env_of(rec, ns)
    if not seen[env] then
      seen[env] = true
      local t = redis.call('HGET', KEYS[4], env)
      if t then
        local take, tepoch = pair(t)
        if take ~= rec.takeover and epoch <= tonumber(tepoch) then
          return {'conflict', 'env ' .. env .. ' agreed takeover ' .. take .. ' at epoch ' .. tepoch ..
            ', not ' .. rec.takeover .. ' — register with a higher epoch to displace'}
        end
      end
    end
  end
  for _, ns in ipairs(rec.namespaces) do
    local key, env = rec.hostname .. ns, env_of(rec, ns)
    local b = redis.call('HGET', KEYS[3], key)
    local keep = rec.bindingEpoch
    if b then
      local benv, bepoch = pair(b)
      if benv ~= env then
        redis.call('HSET', KEYS[5], key, tostring(now + lease))
      elseif tonumber(bepoch) > epoch then
        keep = bepoch
      end
    end
    redis.call('HSET', KEYS[3], key, env .. '\\n' .. keep)
  end
  for env in pairs(seen) do
    local t = redis.call('HGET', KEYS[4], env)
    local keep = rec.bindingEpoch
    if t then
      local take, tepoch = pair(t)
      if take == rec.takeover and tonumber(tepoch) > epoch then keep = tepoch end
    end
    redis.call('HSET', KEYS[4], env, rec.takeover .. '\\n' .. keep)
  end
end

local deadline = renew_lease(rec, KEYS[6], now, lease)
rec.registeredAt = now
rec.gen = redis.call('INCR', KEYS[7])
rec.rev = 1

remember_owner(KEYS[9], KEYS[10], KEYS[1], rec, now, tonumber(ARGV[5]), tonumber(ARGV[6]))
if replaced ~= '' and replaced ~= rec.sessionId then index_del(KEYS[1], KEYS[8], replaced) end
local encoded = cjson.encode(rec)
index_set(KEYS[1], KEYS[8], rec.sessionId, encoded, rec.expiry)
redis.call('HSET', KEYS[2], rec.clientId, rec.account .. '\\n' .. rec.sessionId)
return {'ok', encoded, deadline, replaced, prev_allowed, tostring(now)}
`;

export const registerSessionScript = defineScript("register-session", LUA, "b1ce60bc6b359c1fca4d8b928f9ed263cf3fe513");

export interface RegisterSessionInput {
  /** The draft record's JSON (sessionId, clientId, account, hostname, env, envs, namespaces, …). */
  json: string;
  /** The draft's clientId (the drain key is the client's). */
  clientId: string;
  leaseTtlMs: number;
  hostnameAware: boolean;
  /** "" for none. */
  prevSessionId: string;
  ownerMemoryMs: number;
  ownerMemoryCap: number;
}

export type RegisterSessionResult =
  /**
   * The written record's JSON, the drain deadline (ms, "" when none), whether the prevSessionId's
   * rows may be reclaimed by this registration, and Redis' now.
   */
  | { kind: "ok"; json: string; drainDeadline: string; prevAllowed: boolean; now: number }
  | { kind: "conflict"; message: string };

export async function registerSession(
  redis: RedisPort,
  keys: Keys,
  input: RegisterSessionInput,
): Promise<RegisterSessionResult> {
  const reply = (await redis.run(
    registerSessionScript,
    sessionScriptKeys(keys, "register-session", { clientId: input.clientId }),
    [
      input.json,
      input.leaseTtlMs,
      input.hostnameAware ? "1" : "0",
      input.prevSessionId,
      input.ownerMemoryMs,
      input.ownerMemoryCap,
    ],
  )) as string[];
  if (reply[0] === "conflict") return { kind: "conflict", message: reply[1] ?? "conflict" };
  const [, json = "", deadline = "", , prevAllowed, now = "0"] = reply as [
    string,
    string,
    string,
    string,
    number,
    string,
  ];
  return { kind: "ok", json, drainDeadline: deadline, prevAllowed: prevAllowed === 1, now: Number(now) };
}
