import { type CheckContext, isRefusal, isServed, REFUSAL_TEXT, SERVED_TEXT, sleep } from "./context.ts";

/** Slack on top of a lease or deadline before a check relies on the worker having noticed it. */
const SLACK_MS = 700;

/** How long the checks wait for a heartbeat: a worker heartbeats every TTL / 3 or so. */
const heartbeatWaitMs = (ctx: CheckContext) => ctx.registry.leaseMs + 2000;

/** Resolves once a heartbeat after now was answered 200 and matches `seen` (true), or false on time out. */
async function nextHeartbeat(ctx: CheckContext, seen: (draining: boolean) => boolean = () => true): Promise<boolean> {
  const from = ctx.registry.heartbeats.length;
  const ok = await ctx.registry.waitFor(
    () => ctx.registry.heartbeats.slice(from).some((h) => seen(h.draining)),
    heartbeatWaitMs(ctx),
  );
  // The answer is on its way back: give the worker a moment to act on it.
  await sleep(100);
  return ok;
}

/** A forward of a new instance, attested as Pinboard does. */
const forwardNew = (ctx: CheckContext) =>
  ctx.client.call({ method: "GET", target: ctx.target(ctx.nextId()), epoch: ctx.nextEpoch(), attestation: "valid" });

/**
 * The lease withheld: the registry answers heartbeats 503 for the lease TTL and more, and a new
 * activation must then be refused in-band; once heartbeats are answered again, it is served.
 */
export async function withheldLeaseChecks(ctx: CheckContext): Promise<void> {
  const group = "refusal";
  ctx.registry.withholding = true;
  const last = ctx.registry.heartbeats.at(-1)?.at ?? Date.now();
  await sleep(Math.max(0, last + ctx.registry.leaseMs + SLACK_MS - Date.now()));
  const answer = await forwardNew(ctx);
  ctx.registry.withholding = false;
  ctx.expect(
    group,
    "a new activation is refused in-band once the lease is withheld past its TTL",
    answer,
    isRefusal(answer),
    REFUSAL_TEXT,
  );
  if (!(await nextHeartbeat(ctx))) {
    ctx.fail(
      group,
      "heartbeats resume once answered again",
      "no heartbeat",
      `a heartbeat within ${heartbeatWaitMs(ctx)} ms`,
    );
    return;
  }
  const again = await forwardNew(ctx);
  ctx.expect(group, "a new activation is served once the lease is renewed", again, isServed(again), SERVED_TEXT);
}

/** An operator drain (heartbeat answer draining: true) refuses new activations in-band. */
export async function drainingChecks(ctx: CheckContext): Promise<void> {
  const group = "refusal";
  ctx.registry.draining = true;
  const drained = await nextHeartbeat(ctx, (draining) => draining);
  const answer = await forwardNew(ctx);
  ctx.registry.draining = false;
  if (!drained) {
    ctx.fail(
      group,
      "a draining worker refuses new activations",
      "no heartbeat",
      `a heartbeat within ${heartbeatWaitMs(ctx)} ms`,
    );
    return;
  }
  ctx.expect(group, "a new activation is refused in-band while draining", answer, isRefusal(answer), REFUSAL_TEXT);
  await nextHeartbeat(ctx, (draining) => !draining);
}

/**
 * A wind_down message in a heartbeat answer: the worker acks it, and once its deadline passed, a
 * new request to that instance is refused in-band.
 */
export async function windDownChecks(ctx: CheckContext): Promise<void> {
  const group = "wind_down";
  const id = ctx.nextId();
  const epoch = ctx.nextEpoch();
  const target = ctx.target(id);
  const first = await ctx.client.call({ method: "GET", target, epoch, attestation: "valid" });
  if (!ctx.expect(group, "the instance to wind down is served", first, isServed(first), SERVED_TEXT)) return;
  const msgId = "check-worker-wind-down";
  const deadlineS = 1;
  ctx.registry.windDown(msgId, ctx.ns, id, deadlineS);
  const queuedAt = Date.now();
  const acked = await ctx.registry.waitFor(
    () => ctx.registry.heartbeats.some((h) => h.acks.includes(msgId)),
    heartbeatWaitMs(ctx),
  );
  if (acked) ctx.pass(group, "the wind_down message is acked on a later heartbeat");
  else
    ctx.fail(
      group,
      "the wind_down message is acked on a later heartbeat",
      "no ack",
      `acks: ["${msgId}"] within ${heartbeatWaitMs(ctx)} ms`,
    );
  await sleep(Math.max(0, queuedAt + deadlineS * 1000 + SLACK_MS - Date.now()));
  const after = await ctx.client.call({ method: "GET", target, epoch, attestation: "valid" });
  ctx.expect(
    group,
    "a request to the instance after its deadline is refused in-band",
    after,
    isRefusal(after),
    REFUSAL_TEXT,
  );
}
