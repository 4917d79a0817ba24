import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "../../src/runtime/node/process/free-port.ts";
import { until } from "../support/local-worker.ts";
import { startTestRedis, type TestRedis } from "../support/redis.ts";

/**
 * `npm start` without a passport key, run twice in the same working directory: the first start
 * writes the development key to .pinboard/dev-passport-secret (0600), the second reads it back,
 * so a credential printed by the first still works after the restart. With
 * PINBOARD_PASSPORT_SECRET set, the start prints how to mint credentials.
 */

const ENTRY = fileURLToPath(new URL("../../src/node.ts", import.meta.url));
const TSX = import.meta.resolve("tsx");
const children: ChildProcess[] = [];
let t: TestRedis;

beforeAll(async () => {
  t = await startTestRedis({ single: true });
});
afterAll(async () => {
  for (const child of children) child.kill("SIGKILL");
  await t?.stop();
});

async function start(cwd: string, env: Record<string, string> = {}) {
  const port = await freePort();
  const child = spawn(process.execPath, ["--import", TSX, ENTRY], {
    cwd,
    env: {
      PATH: process.env.PATH ?? "",
      HOME: process.env.HOME ?? "",
      PORT: String(port),
      REDIS_URL: t.url,
      PINBOARD_LOG_LEVEL: "warn",
      ...env,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.push(child);
  let output = "";
  child.stdout?.on("data", (d: Buffer) => (output += d.toString()));
  child.stderr?.on("data", (d: Buffer) => (output += d.toString()));
  const marker = env.PINBOARD_PASSPORT_SECRET ? /export PINBOARD_OPERATOR_TOKEN=/ : /^Try:$/m;
  let stdout = "";
  child.stdout?.on("data", (d: Buffer) => (stdout += d.toString()));
  const banner = await until(
    () => {
      if (child.exitCode !== null) throw new Error(`pinboard exited:\n${output}`);
      return marker.test(output) ? output : null;
    },
    // A cold tsx start on a loaded 2-core machine.
    20_000,
    25,
  );
  const stop = () =>
    new Promise<void>((resolve) => {
      child.once("exit", () => resolve());
      child.kill("SIGTERM");
    });
  return { url: `http://127.0.0.1:${port}`, banner, stdout: () => stdout, stop };
}

/** The operator credential the start wrote to `.pinboard/dev.env`. */
const operatorToken = (cwd: string) =>
  /^export PINBOARD_OPERATOR_TOKEN='(\S+)'$/m.exec(readFileSync(join(cwd, ".pinboard", "dev.env"), "utf8"))![1]!;

describe("the development key", { timeout: 60_000 }, () => {
  it("is written once (0600) and reused by the next start, so printed credentials survive a restart", async () => {
    const cwd = mkdtempSync(join(tmpdir(), "pinboard-devkey-"));
    const first = await start(cwd);
    expect(first.banner).toContain("minted a development key and saved it in .pinboard/dev-passport-secret");
    const file = join(cwd, ".pinboard", "dev-passport-secret");
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const secret = readFileSync(file, "utf8").trim();
    // Hex: a shell word after `--secret` that never starts with "-" (the CLI would take it for an option).
    expect(secret).toMatch(/^[0-9a-f]{64}$/);
    const token = operatorToken(cwd);
    // Stdout (a service's log) holds neither the key nor a credential; it says where they are.
    expect(first.stdout()).not.toContain(secret);
    expect(first.stdout()).not.toContain(token);
    expect(first.stdout()).not.toMatch(/eyJ/);
    expect(first.stdout()).toContain(
      "Credentials (pinboard:worker and pinboard:operator, all namespaces and hosts, 24 h) are in .pinboard/dev.env " +
        "(mode 0600; not printed, so they stay out of logs). Load them with:\n  . .pinboard/dev.env\n",
    );
    expect(first.stdout()).toContain(
      "mint more with npx pinboard mint-credential --secret-file .pinboard/dev-passport-secret --sub NAME --scope …",
    );
    expect(statSync(join(cwd, ".pinboard", "dev.env")).mode & 0o777).toBe(0o600);
    await first.stop();

    const second = await start(cwd);
    expect(second.banner).toContain("using the development key from .pinboard/dev-passport-secret");
    expect(second.stdout()).not.toContain(secret);
    // The first start's credential, against the second process.
    const res = await until(
      async () => {
        const r = await fetch(`${second.url}/registry/health`, { headers: { authorization: `Bearer ${token}` } });
        return r.status === 503 ? null : r;
      },
      5000,
      50,
    );
    expect(res.status).toBe(200);
    await second.stop();
  });

  it("with PINBOARD_PASSPORT_SECRET set, prints how to mint credentials and writes no key file", async () => {
    const cwd = mkdtempSync(join(tmpdir(), "pinboard-devkey-"));
    const run = await start(cwd, { PINBOARD_PASSPORT_SECRET: "a-real-secret-of-at-least-32-characters!" });
    expect(run.banner).toContain(
      `export PINBOARD_WORKER_TOKEN=$(npx pinboard mint-credential --sub worker-a --scope pinboard:worker --namespaces '*' --hosts '*')`,
    );
    expect(run.banner).toContain("--scope pinboard:operator");
    expect(run.banner).not.toContain("a-real-secret-of-at-least-32-characters!");
    expect(() => statSync(join(cwd, ".pinboard"))).toThrow();
    await run.stop();
  });

  it("served beyond loopback (HOST=0.0.0.0), is warned about; on loopback it is not", async () => {
    const cwd = mkdtempSync(join(tmpdir(), "pinboard-devkey-"));
    const warning =
      "HOST=0.0.0.0 serves other machines with the development key (.pinboard/dev-passport-secret), meant for one machine: " +
      "set PINBOARD_PASSPORT_SECRET or PINBOARD_PASSPORT_JWKS before serving beyond loopback";
    const [open, loopback, configured] = await Promise.all([
      start(cwd, { HOST: "0.0.0.0" }),
      start(cwd),
      start(cwd, { HOST: "0.0.0.0", PINBOARD_PASSPORT_SECRET: "a-real-secret-of-at-least-32-characters!" }),
    ]);
    expect(open.banner).toContain(warning);
    expect(loopback.banner).not.toContain("HOST=");
    expect(configured.banner).not.toContain("HOST=");
    await Promise.all([open.stop(), loopback.stop(), configured.stop()]);
  });

  it("is git-ignored", () => {
    const ignore = readFileSync(fileURLToPath(new URL("../../.gitignore", import.meta.url)), "utf8");
    expect(ignore.split("\n")).toContain(".pinboard/");
  });
});
