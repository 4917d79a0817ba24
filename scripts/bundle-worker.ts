import { createHash } from "node:crypto";
import { mkdir, readFile, rename, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const ROOT = fileURLToPath(new URL("../", import.meta.url));
const OUT_DIR = join(ROOT, ".tmp", "workers-entry");

let bundled: Promise<string> | undefined;

/**
 * Bundles src/cloudflare.ts the way wrangler does for workerd (ESM, workerd/worker/browser export
 * conditions, so @upstash/redis and jose pick their fetch/WebCrypto builds). Once per test
 * process; the file is named by its content hash, so parallel test files never clobber each
 * other and an unchanged source reuses the same file.
 */
export function bundleWorker(): Promise<string> {
  bundled ??= (async () => {
    const result = await build({
      entryPoints: [join(ROOT, "src/cloudflare.ts")],
      absWorkingDir: ROOT,
      bundle: true,
      write: false,
      format: "esm",
      platform: "neutral",
      target: "es2022",
      conditions: ["workerd", "worker", "browser"],
      mainFields: ["browser", "module", "main"],
      logLevel: "silent",
    });
    const code = result.outputFiles[0]!.contents;
    const hash = createHash("sha256").update(code).digest("hex").slice(0, 16);
    const path = join(OUT_DIR, `worker-${hash}.mjs`);
    await mkdir(OUT_DIR, { recursive: true });
    const existing = await readFile(path).catch(() => undefined);
    if (!existing?.equals(code)) {
      const tmp = `${path}.${process.pid}.tmp`;
      await writeFile(tmp, code);
      await rename(tmp, path);
    }
    return path;
  })();
  return bundled;
}
