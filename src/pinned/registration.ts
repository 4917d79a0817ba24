import type { ChallengePair, ChallengeState } from "./challenge.ts";
import { ClientIdClash } from "./client-id-clash.ts";
import { type ControlMessage, MessageLedger } from "./control-messages.ts";
import { Lease } from "./lease.ts";
import { backoffMs, type PinboardAnswer, PinboardCallError, type PinboardClient } from "./pinboard-client.ts";
import { failureFields, isProbeFailure } from "./register-diagnosis.ts";
import { isRegistered, type RegistrationFields, registerBody } from "./register-request.ts";
import { RegistryCalls, sleep } from "./registry-calls.ts";
import type { PinnedLogger } from "./types.ts";

export type { ControlMessage, RegistrationFields };

export interface RegistrationHooks {
  headroom(): number;
  ownDraining(): boolean;
  /** Resident instances, for `instances` on a re-register. */
  instances(): Record<string, string[]>;
  duplicates(list: { ns: string; id: string }[]): void;
  /** `sinceSentMs`: how long ago the heartbeat that brought it was sent (Pinboard counted its deadline from before then). */
  message(message: ControlMessage, sinceSentMs: number): void;
  /** `draining` as Pinboard sees it (own flag or operator drain) and when a timed drain ends (drainEndsAt). */
  drain(draining: boolean, endsAt: number | undefined): void;
  /** A heartbeat found the session gone once a timed operator drain's deadline had passed. */
  drainDeadlinePassed(): void;
  /** A heartbeat renewed the lease after it had lapsed: every activation may have another owner now. */
  lapsedLeaseRenewed(): void;
}

export interface RegistrationOptions {
  log: PinnedLogger;
  now(): number;
  random?: () => number;
  /** Lease unhealthy once this long passed since the last renewal; default 2/3 of expiresInMs. */
  leaseUnhealthyAfterMs?: number;
}

/**
 * How long attestations for the session this worker just lost (a 409 from a heartbeat) or gave up
 * (deregister) are still accepted: forwards Pinboard signed for it before it learned may still be
 * arriving. Pinboard signs a forward just before it leaves, from a resolution at most 5 s old, and
 * the worker hears of the loss only after Pinboard lost the session, so 5 s covers them.
 */
export const RETIRED_SESSION_GRACE_MS = 5000;

/**
 * The registration loop: register with a fresh challenge, heartbeat every expiresInMs / 3
 * (jittered exponential backoff after a failure), and re-register — only from here, the
 * heartbeat path — when Pinboard answers 409 reregister or superseded, offering the resident
 * instances and the previous session for reclaim. A heartbeat 403 is retried with the same
 * session. Control messages are handled once and acked until Pinboard stops re-delivering.
 */
export class Registration {
  sessionId: string | null = null;
  /** The session a pending re-register reclaims from. */
  prevSessionId: string | null = null;
  /** The session held before, and until when attestations for it are accepted. */
  private retired: { sessionId: string; untilMs: number } | null = null;
  readonly lease: Lease;
  operatorDraining = false;
  degraded = false;
  drainDeadline: number | undefined;
  reregistrations = 0;
  private started = false;
  private stopped = false;
  /** halt(): no more heartbeats or re-registers; the session stays for releases and deregister. */
  private halted = false;
  /** When (local clock) the last answer's timed drain deadline passes, if one was given. */
  private drainEndsAt: number | undefined;
  private failures = 0;
  private timer: ReturnType<typeof setTimeout> | null = null;
  private tick: Promise<void> | null = null;
  /** The register call under way, settling (never failing) once its answer has been applied. */
  private answering: Promise<void> | null = null;
  private readonly ledger = new MessageLedger();
  private readonly random: () => number;
  private readonly calls: RegistryCalls;
  private readonly clash: ClientIdClash;
  /** No re-register before this (ms): another live process holds the clientId (client-id-clash.ts). */
  private backoffUntil = 0;

  constructor(
    client: PinboardClient,
    private readonly challenge: ChallengeState,
    private readonly fields: RegistrationFields,
    private readonly hooks: RegistrationHooks,
    private readonly options: RegistrationOptions,
  ) {
    this.random = options.random ?? Math.random;
    this.lease = new Lease(options.now, options.leaseUnhealthyAfterMs);
    this.calls = new RegistryCalls(client, options.log, this.random);
    this.clash = new ClientIdClash(fields.clientId);
  }

  get isStarted(): boolean {
    return this.started && !this.stopped;
  }

  /** Registers (retrying transient failures with backoff) and starts the heartbeat loop. */
  async start(): Promise<void> {
    if (this.started) throw new Error("the worker was already started");
    this.started = true;
    this.lease.held = true;
    for (let attempt = 0; ; attempt++) {
      if (this.stopped) throw new Error("the worker was stopped before it registered");
      try {
        await this.register();
      } catch (err) {
        if (isFatal(err)) {
          this.stopped = true;
          this.lease.held = false;
          throw err;
        }
        const delayMs = backoffMs(attempt, 250, 5000, this.random);
        this.options.log.warn(
          "register failed, retrying",
          failureFields({ attempt: attempt + 1, retryInMs: delayMs }, err),
        );
        await sleep(delayMs);
        continue;
      }
      if (this.stopped) {
        // stop() ran while this register was in flight: do not leave the session behind.
        await this.deregister();
        throw new Error("the worker was stopped before it registered");
      }
      break;
    }
    this.schedule(this.interval());
  }

  /**
   * Stops heartbeating and re-registering for good, without deregistering: a timed operator drain
   * ended (at its deadline Pinboard lets the session die, and every re-register would die too).
   */
  halt(): void {
    this.halted = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }

  /**
   * Gives the session up without a deregister: a drain's deadline ended it at Pinboard already
   * (deregister would answer 409 unknown session). Attestations for it are accepted for the grace.
   */
  abandon(): void {
    this.halt();
    this.stopped = true;
    this.lease.held = false;
    if (this.sessionId) this.retire(this.sessionId);
    this.sessionId = null;
  }

  /** Runs a heartbeat now (after the one under way, if any). */
  async heartbeatNow(): Promise<void> {
    if (!this.isStarted) return;
    if (this.tick) await this.tick;
    if (this.timer) clearTimeout(this.timer);
    await this.runTick();
  }

  /** Stops the loop and deregisters (three tries at most). */
  async stop(): Promise<void> {
    if (this.stopped && this.sessionId === null) return;
    this.stopped = true;
    this.lease.held = false;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    if (this.tick) await this.tick;
    await this.deregister();
  }

  private async deregister(): Promise<void> {
    const sessionId = this.sessionId;
    this.sessionId = null;
    if (sessionId) {
      // Forwards already on their way carry this audience: accepted for the grace only.
      this.retire(sessionId);
      await this.calls.tries("deregister", { sessionId });
    }
  }

  /** The previous session while attestations for it are still accepted (RETIRED_SESSION_GRACE_MS), else null. */
  retiredSessionId(): string | null {
    const retired = this.retired;
    return retired !== null && this.options.now() < retired.untilMs ? retired.sessionId : null;
  }

  /**
   * The register under way, settling once its answer is in (a success has set sessionId by
   * then), or null when none is. Bounded by the Pinboard client's timeout.
   */
  registering(): Promise<void> | null {
    return this.answering;
  }

  private retire(sessionId: string): void {
    this.retired = { sessionId, untilMs: this.options.now() + RETIRED_SESSION_GRACE_MS };
  }

  /** Releases placements quoting their epochs; false when it gave up after three tries. */
  async release(items: { ns: string; id: string; epoch: string }[]): Promise<boolean> {
    const sessionId = this.sessionId;
    if (!sessionId || items.length === 0) return false;
    const body = items.map((i) => ({ sessionId, namespace: i.ns, id: i.id, epoch: i.epoch }));
    return (await this.calls.tries("release", body)) !== null;
  }

  private interval(): number {
    return Math.max(50, Math.floor(this.lease.ttlMs / 3));
  }

  private schedule(delayMs: number): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    if (this.stopped || this.halted) return;
    this.timer = setTimeout(() => void this.runTick(), delayMs);
    this.timer.unref?.();
  }

  private runTick(): Promise<void> {
    this.timer = null;
    const tick = (async () => {
      try {
        const nextInMs = await this.beat();
        this.failures = 0;
        this.schedule(nextInMs);
      } catch (err) {
        const delayMs = backoffMs(this.failures++, 250, this.interval(), this.random);
        this.options.log.warn(
          "heartbeat failed, retrying",
          failureFields({ failures: this.failures, retryInMs: delayMs }, err),
        );
        this.lease.healthy();
        this.schedule(delayMs);
      }
    })();
    this.tick = tick.finally(() => {
      if (this.tick === tick) this.tick = null;
    });
    return this.tick;
  }

  /** One heartbeat (or the re-register a lost session needs); resolves to the delay until the next. */
  private async beat(): Promise<number> {
    if (this.stopped || this.halted) return this.interval();
    if (!this.sessionId) {
      const waitMs = this.backoffUntil - this.options.now();
      if (waitMs > 0) return waitMs;
      await this.reregister();
      return this.interval();
    }
    const pair = this.challenge.current!;
    const acks = this.ledger.acks();
    const sentAt = this.options.now();
    const answer = await this.calls.post("heartbeat", {
      sessionId: this.sessionId,
      headroom: this.headroom(),
      draining: this.hooks.ownDraining(),
      challenge: pair.challenge,
      challengeValue: pair.challengeValue,
      ...(acks.length ? { acks } : {}),
    });
    if (answer.status === 200) {
      this.ledger.acked(acks);
      // A heartbeat renews the same session whatever moved meanwhile; a register answers with
      // the duplicates, the instances placed elsewhere, itself.
      if (this.renewed(answer.body, sentAt)) this.hooks.lapsedLeaseRenewed();
      this.clash.renewed();
      return this.interval();
    }
    if (answer.status === 409 && this.drainEndsAt !== undefined && this.options.now() >= this.drainEndsAt) {
      // The drain's deadline ended the session: a re-register would be dead on arrival, and so
      // would the next one.
      this.hooks.drainDeadlinePassed();
      return this.interval();
    }
    if (answer.status === 409 && (answer.body.reregister === true || answer.body.superseded === true)) {
      const backoffMs = this.lost(answer.body.error);
      this.prevSessionId = this.sessionId;
      this.retire(this.sessionId);
      this.sessionId = null;
      if (backoffMs > 0) return backoffMs;
      await this.reregister();
      return this.interval();
    }
    throw this.calls.failure("heartbeat", answer);
  }

  /** Logs a lost session; returns how long to wait before re-registering (0: at once). */
  private lost(error: unknown): number {
    const verdict =
      error === "unknown session"
        ? this.clash.lost(!this.lease.lapsed(), this.interval(), this.lease.ttlMs)
        : { delayMs: 0, message: undefined };
    if (verdict.message === undefined) {
      this.options.log.warn("session lost, re-registering", failureFields({}, error));
      return 0;
    }
    this.backoffUntil = this.options.now() + verdict.delayMs;
    this.options.log.warn(
      "session replaced, re-registering later",
      failureFields({ retryInMs: verdict.delayMs }, verdict.message),
    );
    return verdict.delayMs;
  }

  private async reregister(): Promise<void> {
    await this.register();
    this.reregistrations++;
  }

  private async register(): Promise<void> {
    const pair = this.challenge.rotate();
    const advertiseUrl = this.fields.advertiseUrl();
    const call = this.registerCall(pair, advertiseUrl);
    const answering = call.then(noop, noop);
    this.answering = answering;
    const answer = await call.finally(() => {
      if (this.answering === answering) this.answering = null;
    });
    if (isRegistered(answer)) return;
    const hint = isProbeFailure(answer)
      ? await this.calls.probeFailureHint({ advertiseUrl, secret: this.fields.secret, ...pair })
      : undefined;
    throw this.calls.failure("register", answer, undefined, hint);
  }

  /** POST /registry/register; a 200 with a sessionId is applied before the promise settles. */
  private async registerCall(pair: ChallengePair, advertiseUrl: string): Promise<PinboardAnswer> {
    const prev = this.prevSessionId;
    const sentAt = this.options.now();
    const answer = await this.calls.post(
      "register",
      registerBody(this.fields, {
        pair,
        advertiseUrl,
        headroom: this.headroom(),
        draining: this.hooks.ownDraining(),
        ...(prev ? { reclaim: { prevSessionId: prev, instances: this.hooks.instances() } } : {}),
      }),
    );
    if (!isRegistered(answer)) return answer;
    this.sessionId = answer.body.sessionId;
    this.prevSessionId = null;
    this.ledger.clear();
    this.renewed(answer.body, sentAt);
    const duplicates = answer.body.duplicates;
    if (Array.isArray(duplicates) && duplicates.length) {
      this.hooks.duplicates(duplicates.filter(isRef));
    }
    return answer;
  }

  /** Takes a 200 answer's lease, drain and messages; true when the lease had lapsed before it. */
  private renewed(body: Record<string, unknown>, sentAt: number): boolean {
    const now = this.options.now();
    const lapsedBefore = this.lease.renewed(sentAt, body.expiresInMs);
    this.degraded = body.degraded === true;
    this.drainDeadline = typeof body.drainDeadline === "number" ? body.drainDeadline : undefined;
    const draining = body.draining === true;
    this.drainEndsAt =
      draining && this.drainDeadline !== undefined ? drainEndsAt(sentAt, this.drainDeadline) : undefined;
    this.operatorDraining = draining && !this.hooks.ownDraining();
    this.hooks.drain(draining, this.drainEndsAt);
    for (const message of this.ledger.receive(body.messages, now)) this.hooks.message(message, now - sentAt);
    return lapsedBefore;
  }

  private headroom(): number {
    const value = this.hooks.headroom();
    return Number.isFinite(value) ? Math.max(0, value) : 0;
  }
}

/**
 * Register failures that retrying cannot fix: bad credential, scope, conflicts, invalid body, a
 * wrong base path (404). A failed probe of the advertise URL is retried: the worker may yet come up.
 */
export function isFatal(err: unknown): boolean {
  if (!(err instanceof PinboardCallError) || err.status === null) return false;
  const s = err.status;
  if (s >= 500 || s === 408 || s === 429) return false;
  if (isProbeFailure({ status: s, body: err.body })) return false;
  return s >= 400;
}

const noop = (): void => {};

function isRef(value: unknown): value is { ns: string; id: string } {
  const v = value as { ns?: unknown; id?: unknown } | null;
  return typeof v === "object" && v !== null && typeof v.ns === "string" && typeof v.id === "string";
}

/**
 * When a timed drain ends by this worker's clock, at the earliest Pinboard's deadline can be:
 * Pinboard sends the seconds left rounded up, counted from its own now, which is never before
 * the heartbeat was sent; so 1 s less for the rounding and, as for the lease, 5 % less for clock
 * rates. Counted from the answer's arrival instead, the worker would serve up to a second and a
 * round trip past the moment Pinboard re-places its instances.
 */
export function drainEndsAt(sentAt: number, deadlineSeconds: number): number {
  const ms = deadlineSeconds * 1000;
  return sentAt + ms - 1000 - Math.ceil(ms / 20);
}
