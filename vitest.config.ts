import { existsSync } from "node:fs";
import { configDefaults, defineConfig, type TestProjectInlineConfiguration } from "vitest/config";

/**
 * The unit tier (`npm run test:unit`, the vitest project "unit"): the tests of pure modules. Each
 * file here starts no redis-server, no child process and no server, and opens no socket, so the
 * tier runs in seconds. Every other test file is the integration tier (project "integration");
 * `npm test` runs both projects, each file once. A test joins the unit tier by being listed here;
 * one that starts anything belongs in the integration tier (docs/testing.md, Layout).
 */
export const UNIT_TESTS = [
  "test/audit/entry.test.ts",
  "test/audit/via.test.ts",
  "test/auth/claims.test.ts",
  "test/auth/account-tags.test.ts",
  "test/auth/worker-secrets.test.ts",
  "test/cli/args.test.ts",
  "test/cli/explain.test.ts",
  "test/cli/render.test.ts",
  "test/cli/render-audit.test.ts",
  "test/cli/suggest.test.ts",
  "test/cli/table.test.ts",
  "test/config.test.ts",
  "test/console/fleet-order.test.ts",
  "test/contract/attestation.test.ts",
  "test/contract/attestation-shape.test.ts",
  "test/contract/base64url.test.ts",
  "test/contract/bounded-lru.test.ts",
  "test/contract/durable-index.test.ts",
  "test/contract/json-text.test.ts",
  "test/contract/names.test.ts",
  "test/contract/terminal-safe.test.ts",
  "test/data-plane/framing.test.ts",
  "test/data-plane/header-hygiene.test.ts",
  "test/data-plane/plan.test.ts",
  "test/data-plane/route.test.ts",
  "test/errors.test.ts",
  "test/layering.test.ts",
  "test/operator/audit-scope.test.ts",
  "test/operator/read-gate.test.ts",
  "test/operator/latency-bins.test.ts",
  "test/operator/spread-cache.test.ts",
  "test/operator/traffic-history.test.ts",
  "test/outbound/worker-url.test.ts",
  "test/pinned/lease.test.ts",
  "test/pinned/registration.test.ts",
  "test/pinned/seen-attestations.test.ts",
  "test/pinned/wind-down.test.ts",
  "test/pinned/worker-options.test.ts",
  "test/placement/affinity.test.ts",
  "test/placement/inflight.test.ts",
  "test/placement/refusal.test.ts",
  "test/redis-mode.test.ts",
  "test/redis/glob.test.ts",
  "test/redis/keys.test.ts",
  "test/redis/redis-errors.test.ts",
  "test/redis/rest/upstash-errors.test.ts",
  "test/registry/rebind-rows.test.ts",
  "test/runtime/node/data-plane/deadline-timer.test.ts",
  "test/runtime/node/jws.test.ts",
  "test/runtime/workers/misconfigured.test.ts",
  "test/scripts/chaos/checker.test.ts",
  "test/scripts/chaos/report.test.ts",
  "test/scripts/chaos/statistics.test.ts",
  "test/scripts/demo/instructions.test.ts",
  "test/scripts/dev/worker-env-file.test.ts",
  "test/sweeper/subrequest-budget.test.ts",
];

/**
 * Integration files whose Redis does not follow PINBOARD_TEST_REDIS: each starts its own (a
 * child's embedded redis-server, a cluster of its own) or none. `npm run test:cluster` leaves
 * them out, with the unit tier, since on a Cluster they would run the very same again.
 * test/redis-mode.test.ts holds that none of them reaches test/support/redis.ts.
 */
export const SAME_ON_EVERY_REDIS = [
  "test/cli/mint-credential.test.ts",
  "test/entries/npx-pinboard.test.ts",
  "test/entries/quick-start.test.ts",
  "test/redis/cluster-no-resend.test.ts",
  "test/runtime/node/data-plane/http-transport.test.ts",
  "test/runtime/node/dev-store-workers-user.test.ts",
  "test/runtime/node/private-file.test.ts",
  "test/runtime/node/workers-user-cluster.test.ts",
  "test/scripts/demo.test.ts",
  "test/scripts/soak.test.ts",
];

const onCluster = process.env.PINBOARD_TEST_REDIS === "cluster";

// A listed file that moved leaves its list (it still runs, as an integration test): say so on every run.
const missing = [...UNIT_TESTS, ...SAME_ON_EVERY_REDIS].filter((file) => !existsSync(new URL(file, import.meta.url)));
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
