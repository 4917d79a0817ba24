import { existsSync } from "node:fs";
import { configDefaults, defineConfig, type TestProjectInlineConfiguration } from "vitest/config";

/**
 * The unit tier (`npm run test:unit`, the vitest project "unit"): the tests of pure modules, named
 * `*.unit.test.ts`. Each starts no redis-server, no child process and no server, and opens no
 * socket, so the tier runs in seconds. Every other test file is the integration tier (project
 * "integration"); `npm test` runs both projects, each file once. A test that starts anything
 * belongs in the integration tier (docs/testing.md, Layout); test/redis-mode.unit.test.ts holds that
 * no unit test reaches test/support/redis.ts.
 */
export const UNIT_TESTS = ["test/**/*.unit.test.ts"];

/**
 * Integration files whose Redis does not follow PINBOARD_TEST_REDIS: each starts its own (a
 * child's embedded redis-server, a cluster of its own) or none. `npm run test:cluster` leaves
 * them out, with the unit tier, since on a Cluster they would run the very same again.
 * test/redis-mode.unit.test.ts holds that none of them reaches test/support/redis.ts.
 */
export const SAME_ON_EVERY_REDIS = [
  "test/cli/check-worker-faults.test.ts",
  "test/cli/check-worker.test.ts",
  "test/cli/mint-credential.test.ts",
  "test/entries/npx-pinboard.test.ts",
  "test/entries/quick-start.test.ts",
  "test/redis/cluster-no-resend.test.ts",
  "test/runtime/node/transport/http-transport.test.ts",
  "test/runtime/node/dev-store/dev-store-workers-user.test.ts",
  "test/runtime/node/dev-store/private-file.test.ts",
  "test/runtime/node/dev-store/workers-user-cluster.test.ts",
  "test/scripts/demo.test.ts",
  "test/scripts/soak.test.ts",
];

const onCluster = process.env.PINBOARD_TEST_REDIS === "cluster";

// A listed file that moved leaves its list (it still runs, as an integration test): say so on every run.
const missing = SAME_ON_EVERY_REDIS.filter((file) => !existsSync(new URL(file, import.meta.url)));
if (missing.length > 0) {
  console.warn(`vitest.config.ts: lists files that do not exist (moved?): ${missing.join(", ")}`);
}

const unit: TestProjectInlineConfiguration = {
  extends: true,
  test: { name: "unit", include: UNIT_TESTS, isolate: false },
};
const integration: TestProjectInlineConfiguration = {
  extends: true,
  test: {
    name: "integration",
    include: ["test/**/*.test.ts"],
    exclude: [...configDefaults.exclude, ...UNIT_TESTS, ...(onCluster ? SAME_ON_EVERY_REDIS : [])],
  },
};

export default defineConfig({
  test: {
    pool: "forks",
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Each integration file starts its own redis-server (and processes) on free ports; two at a time fits 2 cores.
    maxWorkers: 2,
    reporters: ["default"],
    projects: onCluster ? [integration] : [unit, integration],
  },
});
