import { defineConfig } from "vitest/config";
import { UNIT_TESTS } from "./vitest.config.ts";

/** The unit tier alone, as one plain config: what mutation testing runs (stryker.config.json). */
export default defineConfig({
  test: { include: UNIT_TESTS, testTimeout: 30_000 },
});
