import { ATTESTATION_SKEW_S, ATTESTATION_TTL_S, type AttestationAcceptance } from "../contract/attestation.ts";
import { isWorkerNamespace } from "../contract/names.ts";
import { terminalSafe } from "../contract/terminal-safe.ts";
import { randomToken } from "./challenge.ts";
import type { DurabilityStore } from "./durability.ts";
import { DEFAULT_MAX_QUEUED_EVENTS, type GateSettings } from "./live-instance.ts";
import type { Credential } from "./pinboard-client.ts";
import type { InstanceClass, PinnedLogger } from "./types.ts";

export interface WorkerOptions {
  /** Pinboard's base URL, e.g. http://127.0.0.1:8787 (with its basePath, if any). */
  pinboardUrl: string;
  /** Passport credential with the pinboard:worker scope, or a function returning a fresh one. */
  credential: Credential;
  /**
   * Stable name of this worker (operator drains address it), 1 to 256 characters, one per live
   * process. Default: the CLIENT_ID environment variable, else a random one.
   */
  clientId?: string | undefined;
  /** Where Pinboard reaches this worker. Default: the URL of listen(). */
  advertiseUrl?: string | undefined;
  /** Namespace ("/counter") → instance class. */
  namespaces: Record<string, InstanceClass>;
  /** Where instances keep durable state. Default: process memory (and no _wake route). */
  durability?: DurabilityStore | undefined;
  /** Headroom reported to Pinboard. Default: maxInstances minus resident instances. */
  headroom?: (() => number) | undefined;
  /** Resident instances at most; new activations beyond are refused. Default 1000. */
  maxInstances?: number | undefined;
  /** Refuse new activations once the lease was not renewed for this long. Default 2/3 of the lease TTL. */
  leaseUnhealthyAfterMs?: number | undefined;
  /** fetch used for Pinboard calls. */
  fetch?: typeof fetch | undefined;
  /** The secret Pinboard signs attestations with (at least 16 characters). Default: random per process. */
  secret?: string | undefined;
  /** An audience accepted besides the live sessionId (in-process callers, tests). */
  localAudience?: string | undefined;
  /**
   * Refuse attestations that name no request (no htm, htu and epoch claims) or carry no jti.
   * Pinboard signs them on every call; set this once every Pinboard in front of the worker does.
   * Default false.
   */
  requireBoundAttestation?: boolean | undefined;
  /** How long an attestation is accepted, and how many ids the worker remembers to accept each once. */
  attestation?: AttestationOptions | undefined;
  /** Hostname-aware registration fields. */
  hostname?: string | undefined;
  env?: string | undefined;
  envs?: Record<string, string> | undefined;
  takeover?: "wind_down" | "deny" | undefined;
  bindingEpoch?: number | undefined;
  /** Path prefix the app serves under. Default: the path of advertiseUrl. */
  basePath?: string | undefined;
  logger?: PinnedLogger | undefined;
  /** After a wind-down deadline, how long in-flight requests may still run. Default 30000. */
  windDownGraceMs?: number | undefined;
  /**
   * Called once a timed operator drain reached its deadline and the worker stopped serving
   * (instances released, deregistered): the process may exit 0. Also `worker.drained`.
   */
  onDrained?: (() => void) | undefined;
  /** How long _wake waits for an activation before answering 202. Default 5000. */
  wakeWaitMs?: number | undefined;
  /**
   * How long an activation waits for the durability store before the request answers
   * 503 activation failed (Retry-After: 1) and the log names the store and the cause. Default 5000.
   */
  activationTimeoutMs?: number | undefined;
  /**
   * Gives up the input gate: an instance's events interleave at every await, storage included,
   * so a read-modify-write across an await can lose an update. For instances that serialise
   * themselves. blockConcurrencyWhile still holds. Default false.
   */
  allowConcurrency?: boolean | undefined;
  /**
   * Gives up the output gate: answers and WebSocket messages leave without waiting for the
   * writes before them to be durable, so a client may see state a failed write never stored.
   * Default false.
   */
  allowUnconfirmed?: boolean | undefined;
  /**
   * Events (requests, WebSocket messages) that may wait at one instance's input gate; past it a
   * request is answered 503 instance overloaded and a message closes its socket (1013). Default 1000.
   */
  maxQueuedEvents?: number | undefined;
  /** Clock (ms), for tests. */
  now?: (() => number) | undefined;
}

export interface AttestationOptions {
  /**
   * Seconds after its iat a token is accepted, before the skew: at most the contract's 30 (a
   * token's exp is iat + 30). Default 30. With synced clocks, 10.
   */
  maxAgeS?: number | undefined;
  /** Clock skew granted on iat and on the token's end, 0 to 30 seconds. Default 30 (the contract's). With synced clocks, 5. */
  skewS?: number | undefined;
  /**
   * Attestation ids remembered at most (about 76 bytes each); past that the ids expiring first
   * are forgotten and their tokens refused. Default 100000.
   */
  maxRemembered?: number | undefined;
}

export const DEFAULT_MAX_REMEMBERED = 100_000;

/**
 * One line per event: `[pinned] message key=value …: error`, the error (a failure's cause and fix)
 * last, on one line with no control code (ids and errors come from clients and Pinboard: see
 * terminalSafe). A logger of the user's own gets the message and the fields apart.
 */
export function consoleLine(message: string, fields?: Record<string, unknown>): string {
  const { error, ...rest } = fields ?? {};
  const pairs = Object.entries(rest).map(
    ([key, value]) => ` ${key}=${typeof value === "string" ? value : JSON.stringify(value)}`,
  );
  const tail = error === undefined ? "" : `: ${typeof error === "string" ? error : JSON.stringify(error)}`;
  // Stryker disable next-line Regex: \s* on either side takes the other line breaks of a run too
  return terminalSafe(`[pinned] ${message}${pairs.join("")}${tail}`.replace(/\s*[\r\n]+\s*/g, " "));
}

const consoleLogger: PinnedLogger = {
  info: (message, fields) => console.log(consoleLine(message, fields)),
  warn: (message, fields) => console.warn(consoleLine(message, fields)),
  error: (message, fields) => console.error(consoleLine(message, fields)),
};

/** The shortest secret Pinboard accepts at register. */
export const MIN_SECRET_LENGTH = 16;

/**
 * Checks a URL option: http:// or https://, parseable, no user, query or fragment. A URL
 * without a scheme ("127.0.0.1:8787") would otherwise fail every call, retried forever.
 */
function checkHttpUrl(name: string, value: unknown, example: string): string {
  if (typeof value !== "string" || value.trim() === "") {
    throw new TypeError(`createWorker: ${name} is required, e.g. "${example}"`);
  }
  if (!/^[a-z][a-z0-9+.-]*:\/\//i.test(value)) {
    throw new TypeError(
      `createWorker: ${name} ${JSON.stringify(value)} has no scheme; write "http://${value}" (or https://)`,
    );
  }
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new TypeError(`createWorker: ${name} ${JSON.stringify(value)} is not a valid URL, e.g. "${example}"`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new TypeError(`createWorker: ${name} must be an http:// or https:// URL, not ${JSON.stringify(value)}`);
  }
  if (url.username || url.password) throw new TypeError(`createWorker: ${name} must not carry a user or password`);
  if (url.search || url.hash) {
    throw new TypeError(`createWorker: ${name} ${JSON.stringify(value)} must not have a query or fragment`);
  }
  return value;
}

function checkNumber(name: string, value: number | undefined, kind: "positive number" | "non-negative integer"): void {
  if (value === undefined) return;
  const ok =
    typeof value === "number" &&
    Number.isFinite(value) &&
    (kind === "positive number" ? value > 0 : value >= 0 && Number.isInteger(value));
  if (!ok) throw new RangeError(`createWorker: ${name} must be a ${kind}, not ${String(value)}`);
}

/** A number option between `min` (exclusive unless `minIncluded`) and `max`, or a RangeError. */
function checkRange(name: string, value: number | undefined, min: number, max: number, minIncluded: boolean): void {
  if (value === undefined) return;
  const ok = typeof value === "number" && (minIncluded ? value >= min : value > min) && value <= max;
  if (!ok) {
    throw new RangeError(
      `createWorker: ${name} must be a number ${minIncluded ? "from" : "above"} ${min} to ${max}, not ${String(value)}`,
    );
  }
}

/** The attestation options checked (a RangeError naming the option), with the contract's values as defaults. */
function attestationSettings(options: AttestationOptions | undefined): {
  acceptance: AttestationAcceptance;
  maxRemembered: number;
} {
  const { maxAgeS, skewS, maxRemembered } = options ?? {};
  checkRange("attestation.maxAgeS", maxAgeS, 0, ATTESTATION_TTL_S, false);
  checkRange("attestation.skewS", skewS, 0, ATTESTATION_SKEW_S, true);
  if (maxRemembered !== undefined && !(Number.isSafeInteger(maxRemembered) && maxRemembered >= 1)) {
    throw new RangeError(
      `createWorker: attestation.maxRemembered must be a positive integer, not ${String(maxRemembered)}`,
    );
  }
  return {
    acceptance: { maxAgeS: maxAgeS ?? ATTESTATION_TTL_S, skewS: skewS ?? ATTESTATION_SKEW_S },
    maxRemembered: maxRemembered ?? DEFAULT_MAX_REMEMBERED,
  };
}

/** Pinboard's bounds on a clientId (src/registry/schemas.ts). */
const MAX_CLIENT_ID_LENGTH = 256;

/**
 * The clientId option; without it, CLIENT_ID from the environment (unset or empty: none), so two
 * processes started from one file with different CLIENT_IDs do not share a name; else a random one.
 */
function clientIdSetting(option: string | undefined): string {
  const fromEnv = (globalThis as { process?: { env?: Record<string, string | undefined> } }).process?.env?.CLIENT_ID;
  const clientId = option ?? (fromEnv || undefined);
  if (clientId === undefined) return `pinned-${randomToken(9)}`;
  // Stryker disable next-line ConditionalExpression: a non-string's length is undefined, which fails both bounds
  if (typeof clientId === "string" && clientId.length >= 1 && clientId.length <= MAX_CLIENT_ID_LENGTH) return clientId;
  const from = option === undefined ? "CLIENT_ID" : "clientId";
  const given =
    typeof clientId !== "string" ? `a ${typeof clientId}` : clientId === "" ? '""' : `${clientId.length} characters`;
  throw new TypeError(
    `createWorker: ${from} must be a string of 1 to ${MAX_CLIENT_ID_LENGTH} characters, not ${given}`,
  );
}

/** The options once checked, with their defaults filled in. */
export interface WorkerSettings {
  log: PinnedLogger;
  now: () => number;
  classes: ReadonlyMap<string, InstanceClass>;
  namespaces: string[];
  secret: string;
  clientId: string;
  maxInstances: number;
  basePath: string;
  /** options.advertiseUrl without a trailing slash; listen() sets it when unset. */
  advertiseUrl: string | undefined;
  acceptance: AttestationAcceptance;
  maxRemembered: number;
  gates: GateSettings;
}

/** Checks the options (a TypeError, RangeError or Error naming the option) and fills in the defaults. */
export function checkWorkerOptions(options: WorkerOptions): WorkerSettings {
  checkHttpUrl("pinboardUrl", options.pinboardUrl, "http://127.0.0.1:8787");
  if (options.advertiseUrl !== undefined) checkHttpUrl("advertiseUrl", options.advertiseUrl, "http://10.0.0.7:9001");
  const credential: unknown = options.credential;
  if (typeof credential === "string" ? credential.trim() === "" : typeof credential !== "function") {
    throw new TypeError(
      "createWorker: credential is empty; pass a Passport credential with the pinboard:worker scope " +
        "(npm start prints PINBOARD_WORKER_TOKEN)",
    );
  }
  checkNumber("maxInstances", options.maxInstances, "non-negative integer");
  checkNumber("activationTimeoutMs", options.activationTimeoutMs, "positive number");
  const attestation = attestationSettings(options.attestation);
  const log = options.logger ?? consoleLogger;
  const now = options.now ?? Date.now;
  const classes = new Map(Object.entries(options.namespaces));
  if (classes.size === 0) throw new Error("createWorker: declare at least one namespace");
  for (const ns of classes.keys()) {
    if (!isWorkerNamespace(ns))
      throw new Error(`createWorker: invalid namespace ${JSON.stringify(ns)} (expected "/name")`);
  }
  const secret = options.secret ?? randomToken(32);
  // Pinboard refuses a shorter one at register (it keys every attestation): fail here, not forever.
  if ([...secret].length < MIN_SECRET_LENGTH)
    throw new Error(`createWorker: secret must have at least ${MIN_SECRET_LENGTH} characters`);
  return {
    log,
    now,
    classes,
    namespaces: [...classes.keys()],
    secret,
    clientId: clientIdSetting(options.clientId),
    maxInstances: options.maxInstances ?? 1000,
    basePath: (options.basePath ?? (options.advertiseUrl ? new URL(options.advertiseUrl).pathname : "")).replace(
      /\/+$/,
      "",
    ),
    advertiseUrl: options.advertiseUrl?.replace(/\/+$/, ""),
    ...attestation,
    gates: gateSettings(options),
  };
}

function gateSettings(options: WorkerOptions): GateSettings {
  const { maxQueuedEvents } = options;
  if (maxQueuedEvents !== undefined && !(Number.isSafeInteger(maxQueuedEvents) && maxQueuedEvents >= 1)) {
    throw new RangeError(`createWorker: maxQueuedEvents must be a positive integer, not ${String(maxQueuedEvents)}`);
  }
  return {
    allowConcurrency: options.allowConcurrency === true,
    allowUnconfirmed: options.allowUnconfirmed === true,
    maxQueuedEvents: maxQueuedEvents ?? DEFAULT_MAX_QUEUED_EVENTS,
  };
}
