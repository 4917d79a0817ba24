import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { applyMutant, CHAOS_MUTANTS } from "../../../scripts/chaos/mutants.ts";

describe("the chaos campaign's known-bad patches", () => {
  it("names the six rules the matrix must catch", () => {
    expect(CHAOS_MUTANTS.map((m) => m.name).sort()).toEqual([
      "epoch-not-bumped",
      "fence-le",
      "fence-leading-zeros",
      "is-current-true",
      "lease-guard-2s",
      "served-log-async",
    ]);
  });

  for (const mutant of CHAOS_MUTANTS)
    it(`${mutant.name} still applies to ${mutant.file}, exactly once, and changes it`, () => {
      const source = readFileSync(mutant.file, "utf8");
      const mutated = applyMutant(mutant, source);
      expect(mutated).not.toBe(source);
      for (const { replace } of mutant.edits) expect(mutated).toContain(replace);
    });

  it("refuses a pattern that is missing or ambiguous", () => {
    const mutant = { name: "m", breaks: "b", file: "f", edits: [{ find: "x < 1", replace: "x <= 1" }] };
    expect(applyMutant(mutant, "if x < 1 then")).toBe("if x <= 1 then");
    expect(() => applyMutant(mutant, "if y then")).toThrow("mutant m: pattern not found in f");
    expect(() => applyMutant(mutant, "x < 1 or x < 1")).toThrow("mutant m: pattern found more than once in f");
  });
});
