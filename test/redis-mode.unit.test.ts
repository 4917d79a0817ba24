import { readdirSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { SAME_ON_EVERY_REDIS } from "../vitest.config.ts";
import { importClosure } from "./support/imports.ts";

/**
 * `npm run test:cluster` skips SAME_ON_EVERY_REDIS (vitest.config.ts): files that would run the
 * very same on a Cluster. That holds only while none of them starts the suite's Redis: none may
 * reach test/support/redis.ts (startTestRedis, which follows PINBOARD_TEST_REDIS) or read the
 * variable itself.
 */

const ROOT = fileURLToPath(new URL("../", import.meta.url));
const SUITE_REDIS = `${ROOT}test/support/redis.ts`;

describe("the files the Cluster run leaves out", () => {
  it.each(SAME_ON_EVERY_REDIS)("%s never starts the suite's Redis", (file) => {
    const closure = [...importClosure(`${ROOT}${file}`)];
    expect(closure).not.toContain(SUITE_REDIS);
    const readers = closure.filter((path) => readFileSync(path, "utf8").includes("PINBOARD_TEST_REDIS"));
    expect(readers).toEqual([]);
  });

  it("would notice one that does", () => {
    expect(importClosure(`${ROOT}test/data-plane/refusals.test.ts`)).toContain(SUITE_REDIS);
  });
});

describe("the unit tier (*.unit.test.ts)", () => {
  const unitTests = readdirSync(`${ROOT}test`, { recursive: true, encoding: "utf8" })
    .filter((path) => path.endsWith(".unit.test.ts"))
    .map((path) => `test/${path}`);

  it("is found by its name", () => {
    expect(unitTests).toContain("test/redis-mode.unit.test.ts");
    expect(unitTests.length).toBeGreaterThan(50);
  });

  it.each(unitTests)("%s never starts the suite's Redis", (file) => {
    expect([...importClosure(`${ROOT}${file}`)]).not.toContain(SUITE_REDIS);
  });
});
