import { isId, isLabel, isNamespace, isReservedNamespace } from "../contract/names.ts";
import { badRequest } from "../errors/pinboard-error.ts";
import { SINGLE_ENV, SINGLE_HOSTNAME } from "../redis/keys.ts";
import type { Takeover } from "./record.ts";
import type { RegisterBody } from "./schemas.ts";

/**
 * At most this many instance ids in one register, counted across namespaces as sent (repeats
 * included). Past it the register is 400 `too many instances: at most 100000 ids`, before any
 * Redis work: a reclaim costs Redis one read per id, in one script per bucket.
 */
export const MAX_REGISTER_INSTANCES = 100_000;
/**
 * The shortest accepted worker secret, in characters (Unicode code points). The secret keys the
 * HMAC of every attestation Pinboard signs for the worker and is its session secret for caller
 * attestation.
 */
export const MIN_SECRET_LENGTH = 16;

/** A register body after the field rules: normalised, defaults applied. */
export interface RegistrationFields {
  namespaces: string[];
  advertiseUrl: string;
  hostname: string;
  env: string;
  envs: Record<string, string>;
  takeover: Takeover;
  bindingEpoch: number;
  instances: Array<{ ns: string; id: string }>;
}

/**
 * The register field rules, each a 400: single mode rejects hostname, env, envs, takeover and a
 * nonzero epoch; hostname-aware mode requires hostname (env defaults to it); hostnames and envs
 * are lowercased and refuse `*`, whitespace, `/` and `:`; envs and instances keys must be
 * registered namespaces; advertiseUrl is HTTP(S) with a hostname, no userinfo, no query or
 * fragment, trailing slashes stripped. Pinboard's own additions: the secret has at least
 * MIN_SECRET_LENGTH characters, no namespace shadows one of Pinboard's routes (names.ts) and
 * instances name at most MAX_REGISTER_INSTANCES ids.
 */
export function applyFieldRules(body: RegisterBody, hostnameAware: boolean): RegistrationFields {
  if ([...body.secret].length < MIN_SECRET_LENGTH)
    throw badRequest(`secret too short: at least ${MIN_SECRET_LENGTH} characters`);
  const namespaces = [...new Set(body.namespaces)];
  for (const ns of namespaces) {
    if (!isNamespace(ns)) throw badRequest(`invalid namespace: ${ns}`);
    if (isReservedNamespace(ns)) throw badRequest(`reserved namespace: ${ns}`);
  }
  const registered = new Set(namespaces);
  const advertiseUrl = normaliseAdvertiseUrl(body.advertiseUrl);

  let hostname = SINGLE_HOSTNAME;
  let env = SINGLE_ENV;
  const envs: Record<string, string> = {};
  if (!hostnameAware) {
    for (const field of ["hostname", "env", "envs", "takeover"] as const) {
      if (body[field] != null) throw badRequest(`${field} requires hostname-aware mode`);
    }
    if (body.epoch) throw badRequest("epoch requires hostname-aware mode");
  } else {
    if (body.hostname == null || body.hostname === "") throw badRequest("hostname is required in hostname-aware mode");
    hostname = label(body.hostname, "hostname");
    env = body.env == null ? hostname : label(body.env, "env");
    for (const [ns, value] of Object.entries(body.envs ?? {})) {
      if (!registered.has(ns)) throw badRequest(`namespace not registered: ${ns}`);
      envs[ns] = label(value, "env");
    }
  }

  const instances: Array<{ ns: string; id: string }> = [];
  let sent = 0;
  for (const ids of Object.values(body.instances ?? {})) sent += ids.length;
  if (sent > MAX_REGISTER_INSTANCES) throw badRequest(`too many instances: at most ${MAX_REGISTER_INSTANCES} ids`);
  for (const [ns, ids] of Object.entries(body.instances ?? {})) {
    if (!registered.has(ns)) throw badRequest(`namespace not registered: ${ns}`);
    for (const id of new Set(ids)) {
      if (!isId(id)) throw badRequest(`invalid id: ${id}`);
      instances.push({ ns, id });
    }
  }

  return {
    namespaces,
    advertiseUrl,
    hostname,
    env,
    envs,
    takeover: body.takeover ?? "wind_down",
    bindingEpoch: body.epoch ?? 0,
    instances,
  };
}

function label(value: string, kind: "hostname" | "env"): string {
  const lowered = value.toLowerCase();
  if (!isLabel(lowered)) throw badRequest(`invalid ${kind}: ${value}`);
  return lowered;
}

function normaliseAdvertiseUrl(value: string): string {
  const invalid = () => badRequest(`invalid advertiseUrl: ${value}`);
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw invalid();
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") throw invalid();
  if (url.hostname === "" || url.username !== "" || url.password !== "") throw invalid();
  if (url.search !== "" || url.hash !== "" || value.includes("?") || value.includes("#")) throw invalid();
  return `${url.origin}${url.pathname}`.replace(/\/+$/, "");
}
