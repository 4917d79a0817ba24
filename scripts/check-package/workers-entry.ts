import { execFileSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Miniflare } from "miniflare";
import { startRedisRest } from "../redis-rest.ts";
import { bundledWorkerOptions, workerCompatibility } from "../worker-compatibility.ts";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const WRANGLER = join(ROOT, "node_modules", ".bin", "wrangler");

export interface WorkersEntryCheck {
  /** The installed project: node_modules/pinboard, and where wrangler.toml and the bundle go. */
  dir: string;
  /** The README's wrangler.toml for the package. */
  wranglerToml: string;
  /** The Redis `pinboard serve` uses: the Worker shares it through the REST bridge. */
  redisUrl: string;
  passportSecret: string;
  operatorToken: string;
  /** A path the Node entry has placed and served, with what it answered. */
  placed: { path: string; count: number };
}

/**
 * The Workers entry as a package user deploys it: `wrangler deploy --dry-run` bundles the
 * README's wrangler.toml (main = node_modules/pinboard/dist/src/cloudflare.js), and Miniflare runs that
 * bundle in workerd against the same Redis over the Upstash REST protocol. It must answer the
 * operator routes and forward to the placement the Node entry made.
 */
export async function checkWorkersEntry(check: WorkersEntryCheck): Promise<string> {
  writeFileSync(join(check.dir, "wrangler.toml"), check.wranglerToml);
  execFileSync(WRANGLER, ["deploy", "--dry-run", "--outdir", "bundle"], {
    cwd: check.dir,
    env: { ...process.env, WRANGLER_SEND_METRICS: "false" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const token = "package-check-rest-token-0123456789";
  const bridge = await startRedisRest({ redisUrl: check.redisUrl, token });
  const mf = new Miniflare({
    ...bundledWorkerOptions(
      join(check.dir, "bundle", "cloudflare.js"),
      await workerCompatibility(join(check.dir, "wrangler.toml")),
    ),
    // Module names are relative to this root; the default (the working folder) is another tree.
    modulesRoot: join(check.dir, "bundle"),
    bindings: {
      UPSTASH_REDIS_REST_URL: bridge.url,
      UPSTASH_REDIS_REST_TOKEN: token,
      PINBOARD_PASSPORT_SECRET: check.passportSecret,
      PINBOARD_LOG_LEVEL: "warn",
    },
  });
  try {
    const origin = (await mf.ready).origin;
    const health = await fetch(`${origin}/registry/health`, {
      headers: { authorization: `Bearer ${check.operatorToken}` },
    });
    const report = (await health.json()) as { quarantineMs?: unknown };
    if (health.status !== 200 || typeof report.quarantineMs !== "number")
      throw new Error(`the Workers entry's /registry/health answered ${health.status} ${JSON.stringify(report)}`);
    const answer = await fetch(`${origin}${check.placed.path}`);
    const body = (await answer.json()) as { count?: number };
    if (answer.status !== 200 || body.count !== check.placed.count)
      throw new Error(`the Workers entry's forward answered ${answer.status} ${JSON.stringify(body)}`);
    return `GET ${check.placed.path} → 200 ${JSON.stringify(body)}`;
  } finally {
    await mf.dispose();
    await bridge.close();
  }
}
