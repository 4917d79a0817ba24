import type { CheckContext } from "./context.ts";

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
