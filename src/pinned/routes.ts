import { type Context, Hono } from "hono";
import type { AttestationClaims } from "../contract/attestation.ts";
import { isId } from "../contract/names.ts";
import type { AttestationGuard } from "./attestation-guard.ts";
import type { ChallengeState } from "./challenge.ts";
import { RequestContextImpl } from "./context.ts";
import { DurabilityUnavailableError, isEpoch, StaleEpochError } from "./durability.ts";
import { DeliveryCancelledError, QueueFullError } from "./input-gate.ts";
import { ActivationError, type InstanceTable, RefusedError } from "./instance-table.ts";
import type { LiveInstance } from "./live-instance.ts";
import {
  activationFailed,
  detail,
  EPOCH_HEADER,
  instanceOverloaded,
  internalError,
  invalidAttestation,
  invalidProxySecret,
  json,
  malformedEpoch,
  notFound,
  refusal,
  staleEpoch,
  storageWriteFailed,
  unknownNamespace,
} from "./responses.ts";
import type { PinnedLogger } from "./types.ts";
import { acceptAndClose, canUpgrade, completeUpgrade, dropUpgrade, prepareUpgrade } from "./websocket.ts";

export interface RouteDeps {
  /** Path prefix of the advertise URL ("" or "/something"). */
  basePath: string;
  guard: AttestationGuard;
  challenge: ChallengeState;
  table: InstanceTable;
  namespaces: ReadonlySet<string>;
  /** _wake is mounted only on a worker configured with a durability store. */
  durable: boolean;
  /** How long _wake waits for an activation before answering 202 {"activating":true}. */
  wakeWaitMs: number;
  stats(): Record<string, unknown>;
  log: PinnedLogger;
  /** A request found the instance's input queue full (logs at most one line a second). */
  overload(live: LiveInstance, limit: number): void;
}

interface InstancePath {
  ns: string;
  id: string;
  rest: string;
}

/** Splits `{base}/{ns-segment}/{id}{rest}`; null for any other path. */
export function parseInstancePath(pathname: string, base: string): InstancePath | null {
  if (base && !pathname.startsWith(`${base}/`)) return null;
  const match = /^\/([^/]+)\/([^/]+)(\/.*)?$/.exec(base ? pathname.slice(base.length) : pathname);
  if (!match) return null;
  return { ns: `/${match[1]}`, id: match[2]!, rest: match[3] ?? "" };
}

/** The worker contract's routes, as a Hono app. */
export function buildRoutes(d: RouteDeps): Hono {
  const app = new Hono();

  app.onError((err) => {
    d.log.error("unhandled error", { error: err instanceof Error ? (err.stack ?? err.message) : String(err) });
    return internalError();
  });

  app.get(`${d.basePath}/_pinned/challenge`, async (c) => {
    const request = c.req.raw;
    const allowed = (await d.guard.hasProxySecret(request)) || (await d.guard.verify(request)) !== null;
    if (!allowed) return invalidProxySecret();
    const value = d.challenge.answer(c.req.query("challenge"));
    return value === null ? detail(404, "unknown challenge") : json(200, { value });
  });

  app.get(`${d.basePath}/_pinned/stats`, async (c) => {
    if (!(await d.guard.verify(c.req.raw))) return invalidAttestation();
    return json(200, d.stats());
  });

  app.all("*", (c) => serveInstancePath(d, c));

  return app;
}

/** `{base}/{ns}/{id}{rest}`: checks the call, then an alarm, a wake, or a forward to the instance. */
async function serveInstancePath(d: RouteDeps, c: Context): Promise<Response> {
  const request = c.req.raw;
  const url = new URL(request.url);
  const target = parseInstancePath(url.pathname, d.basePath);
  if (!target) return notFound();
  const { ns, id, rest } = target;
  const upgrade = canUpgrade(c);

  const claims = await d.guard.verify(request, url);
  if (!claims) return upgrade ? acceptAndClose(c, 1008, "invalid attestation") : invalidAttestation();
  const isAlarm = request.method === "POST" && rest === "/_alarm";
  if (isAlarm && !(await d.guard.hasProxySecret(request))) return invalidProxySecret();
  const epoch = request.headers.get(EPOCH_HEADER);
  if (!isEpoch(epoch)) return malformedEpoch();
  if (!d.namespaces.has(ns)) return unknownNamespace();
  if (!isId(id)) return new Response("invalid id", { status: 400, headers: { "content-type": "text/plain" } });

  if (isAlarm) return fireAlarm(d, ns, id, epoch);
  if (d.durable && request.method === "POST" && rest === "/_wake") return wake(d, ns, id, epoch);
  return forward(d, c, target, epoch, claims, upgrade);
}

function failure(d: RouteDeps, err: unknown, context: Record<string, unknown>): Response {
  if (err instanceof StaleEpochError) return staleEpoch();
  if (err instanceof RefusedError) return refusal(err.reason);
  const error = err instanceof Error ? (err.stack ?? err.message) : String(err);
  if (err instanceof ActivationError) {
    const cause = err.cause;
    if (cause instanceof DurabilityUnavailableError) {
      // The store's URL and why it failed say it all; an ioredis stack would not.
      d.log.error("activation failed", { ...context, store: cause.store, error: cause.message });
    } else {
      d.log.error("activation failed", { ...context, error: String(cause instanceof Error ? cause.stack : cause) });
    }
    return activationFailed();
  }
  d.log.error("instance request failed", { ...context, error });
  return internalError();
}

async function forward(
  d: RouteDeps,
  c: Context,
  { ns, id, rest }: InstancePath,
  epoch: string,
  claims: AttestationClaims,
  upgrade: boolean,
): Promise<Response> {
  const request = c.req.raw;
  let live: LiveInstance;
  try {
    live = await d.table.acquire(ns, id, epoch);
  } catch (err) {
    return failure(d, err, { ns, id, epoch });
  }
  try {
    if (upgrade) prepareUpgrade(request, c);
    const ctx = new RequestContextImpl(live, rest, claims);
    const response = await live.answer(
      () => live.instance!.fetch(request, ctx),
      () => request.signal,
    );
    if (!(response instanceof Response)) throw new TypeError(`${ns} fetch() did not return a Response`);
    return upgrade ? await completeUpgrade(request, response) : response;
  } catch (err) {
    if (upgrade) dropUpgrade(request);
    return gateFailure(d, live, err, { ns, id, epoch });
  } finally {
    live.leave();
  }
}

/** A forward that failed once delivered (or while waiting at the input gate). */
function gateFailure(d: RouteDeps, live: LiveInstance, err: unknown, context: Record<string, unknown>): Response {
  if (err instanceof QueueFullError) {
    d.overload(live, err.limit);
    return instanceOverloaded();
  }
  if (err instanceof DeliveryCancelledError) return refusal(err.reason === "lease-lapsed" ? "lease-lapsed" : "evicted");
  const broken = live.output.broken;
  if (broken && !(broken.error instanceof StaleEpochError)) return storageWriteFailed();
  return failure(d, err, context);
}

async function wake(d: RouteDeps, ns: string, id: string, epoch: string): Promise<Response> {
  const acquiring = d.table.acquire(ns, id, epoch);
  let timer: ReturnType<typeof setTimeout> | undefined;
  const waited = await Promise.race([
    acquiring.then(
      (live) => ({ live }),
      (error: unknown) => ({ error }),
    ),
    new Promise<null>((resolve) => (timer = setTimeout(() => resolve(null), d.wakeWaitMs))),
  ]);
  clearTimeout(timer);
  if (waited === null) {
    acquiring.then(
      (live) => live.leave(),
      () => {},
    );
    return json(202, { activating: true });
  }
  if ("error" in waited) return failure(d, waited.error, { ns, id, epoch, route: "_wake" });
  waited.live.leave();
  return json(200, { ok: true });
}

async function fireAlarm(d: RouteDeps, ns: string, id: string, epoch: string): Promise<Response> {
  let live: LiveInstance;
  try {
    live = await d.table.acquire(ns, id, epoch);
  } catch (err) {
    return failure(d, err, { ns, id, epoch, route: "_alarm" });
  }
  try {
    const outcome = await live.alarm.sweep();
    if (outcome === "running") return json(202, { fired: false, running: true });
    return json(200, { fired: outcome === "fired" });
  } catch (err) {
    return failure(d, err, { ns, id, epoch, route: "_alarm" });
  } finally {
    live.leave();
  }
}
