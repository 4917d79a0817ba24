import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    pool: "forks",
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Each file starts its own redis-server (and processes) on free ports; two at a time fits 2 cores.
    maxWorkers: 2,
    reporters: ["default"],
  },
});
