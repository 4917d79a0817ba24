import { type CheckContext, detailText, isDetail, UNKNOWN_CHALLENGE } from "./context.ts";

const EXPECTED_PROBE = '200 {"value": challengeValue}';

/**
 * The challenge probe as Pinboard sends it on register (judged when the worker registered) and on
 * a heartbeat (the challenge the heartbeat names, which may be a new one).
 */
export async function probeChecks(ctx: CheckContext): Promise<void> {
  const group = "challenge";
  const passed = ctx.registry.registerProbes.at(-1)!;
  const failedBefore = ctx.registry.registerProbes.filter((p) => p.outcome !== "pass");
  if (failedBefore.length === 0) ctx.pass(group, "the register's probe is answered with the challenge value");
  else
    ctx.fail(
      group,
      "the register's probe is answered with the challenge value",
      `${failedBefore[0]!.got} (${failedBefore.length} failed probe(s) before one passed)`,
      EXPECTED_PROBE,
    );
  const from = ctx.registry.heartbeats.length;
  const waitMs = ctx.registry.leaseMs * 2 + 5000;
  const beat = await ctx.registry.waitFor(() => ctx.registry.heartbeats.length > from, waitMs);
  if (!beat) {
    ctx.fail(group, "a heartbeat's probe is answered", "no heartbeat", `a heartbeat within ${waitMs} ms`);
    return;
  }
  const probe = ctx.registry.heartbeats[from]!.probe;
  const rotated = probe.challenge !== passed.challenge ? "a new challenge" : "the register's challenge";
  if (probe.outcome === "pass") ctx.pass(group, "a heartbeat's probe is answered with the challenge value", rotated);
  else ctx.fail(group, "a heartbeat's probe is answered with the challenge value", probe.got, EXPECTED_PROBE);
}

/**
 * A session Pinboard no longer knows: the next heartbeat is answered 409 {"error":"unknown
 * session","reregister":true}, and the worker registers again, its probe answered. When it
 * registers with a new challenge, the previous one is then unknown (404).
 */
export async function reregisterChecks(ctx: CheckContext): Promise<void> {
  const group = "challenge";
  const title = "after 409 unknown session the worker registers again and its probe is answered";
  const before = ctx.registry.worker!;
  const registrations = ctx.registry.registrations;
  const probes = ctx.registry.registerProbes.length;
  ctx.registry.forgetSession();
  const waitMs = ctx.registry.leaseMs * 2 + 5000;
  const again = await ctx.registry.waitFor(() => ctx.registry.registrations > registrations, waitMs);
  if (!again) {
    const probe = ctx.registry.registerProbes[probes];
    ctx.fail(
      group,
      title,
      probe ? probe.got : "no register",
      `a register within ${waitMs} ms, its probe answered 200 {"value": challengeValue}`,
    );
    return;
  }
  const now = ctx.registry.worker!;
  if (now.challenge === before.challenge) {
    ctx.pass(group, title, "with the same challenge");
    return;
  }
  ctx.pass(group, title, "with a new challenge");
  const old = await ctx.client.call({
    method: "GET",
    target: `/_pinned/challenge?challenge=${encodeURIComponent(before.challenge)}`,
    attestation: null,
    proxySecret: "own",
  });
  ctx.expect(
    group,
    "the previous challenge is answered 404 once a new one is registered",
    old,
    isDetail(old, 404, UNKNOWN_CHALLENGE),
    detailText(404, UNKNOWN_CHALLENGE),
  );
}
