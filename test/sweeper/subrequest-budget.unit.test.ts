import { describe, expect, it } from "vitest";
import { ConfigError, parseConfig } from "../../src/config/config.ts";
import type { RuntimeInfo } from "../../src/deps/runtime-info.ts";
import { RequestBudgetSpent } from "../../src/redis/request-meter.ts";
import { SubrequestBudget, sweepSubrequestLimit } from "../../src/sweeper/subrequest-budget.ts";

const runtime = (subrequestsPerInvocation?: number): RuntimeInfo => ({
  label: "test",
  backgroundWork: "runs-on",
  fetchDecodesBodies: true,
  startedAt: 0,
  ...(subrequestsPerInvocation !== undefined ? { subrequestsPerInvocation } : {}),
});

describe("a sweep pass's subrequest budget", () => {
  it("defaults to the runtime's cap less a margin (45 of Workers Free's 50), none without a cap", () => {
    expect(sweepSubrequestLimit({ config: parseConfig({}), runtime: runtime(50) })).toBe(45);
    expect(sweepSubrequestLimit({ config: parseConfig({}), runtime: runtime() })).toBe(Infinity);
  });

  it("PINBOARD_SWEEP_SUBREQUEST_BUDGET overrides either default, from 20 up", () => {
    const config = parseConfig({ PINBOARD_SWEEP_SUBREQUEST_BUDGET: "9000" });
    expect(config.sweepSubrequestBudget).toBe(9000);
    expect(sweepSubrequestLimit({ config, runtime: runtime(50) })).toBe(9000);
    expect(sweepSubrequestLimit({ config, runtime: runtime() })).toBe(9000);
    expect(() => parseConfig({ PINBOARD_SWEEP_SUBREQUEST_BUDGET: "19" })).toThrow(ConfigError);
    expect(() => parseConfig({ PINBOARD_SWEEP_SUBREQUEST_BUDGET: "19" })).toThrow(
      "PINBOARD_SWEEP_SUBREQUEST_BUDGET: expected an integer from 20 to 1000000",
    );
  });

  it("refuses the draw past its limit, counting only what went out", () => {
    const budget = new SubrequestBudget(3);
    budget.take();
    budget.take();
    budget.take();
    expect(() => budget.take()).toThrow(RequestBudgetSpent);
    expect(budget.used).toBe(3);
    expect(budget.left).toBe(0);
  });

  it("keeps a held part back until it is freed", () => {
    const budget = new SubrequestBudget(2);
    budget.hold(1);
    budget.take();
    expect(() => budget.take()).toThrow(RequestBudgetSpent);
    budget.free(1);
    budget.take();
    expect(budget.used).toBe(2);
  });

  it("canSpend leaves the given fraction of the limit to later stages; without a limit it always can", () => {
    const budget = new SubrequestBudget(45);
    for (let i = 0; i < 20; i++) budget.take();
    // 25 left; 40% of 45 is 18: 7 more leave exactly 18, 8 would not.
    expect(budget.canSpend(7, 0.4)).toBe(true);
    expect(budget.canSpend(8, 0.4)).toBe(false);
    expect(budget.canSpend(25)).toBe(true);
    expect(budget.canSpend(26)).toBe(false);
    expect(new SubrequestBudget(Infinity).canSpend(1_000_000, 0.4)).toBe(true);
  });
});
