import { type ChildProcess, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { ConfigError, parseConfig } from "../../src/config/config.ts";
import { type EmbeddedRedis, startEmbeddedRedis } from "../../src/runtime/node/dev-store/embedded-redis.ts";
import { freePort } from "../../src/runtime/node/process/free-port.ts";
import { until } from "../support/local-worker.ts";
import { TEST_PASSPORT_SECRET } from "../support/pinboard-app.ts";

/**
 * REDIS_URL names a Redis that does not answer: the Node entry still starts, warns at once with
 * the address (password redacted) and the connection error, keeps /readyz 503, and turns ready
 * when a real redis-server comes up on that port. A non-Redis scheme is refused at parse time.
 */

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const children: ChildProcess[] = [];
let redis: EmbeddedRedis | undefined;
afterAll(async () => {
  for (const child of children) child.kill("SIGKILL");
  await redis?.stop();
});

describe("an unreachable REDIS_URL", { timeout: 30_000 }, () => {
  it("is named in a start-up warning (password redacted), /readyz stays 503 until Redis answers", async () => {
    const [port, redisPort] = await Promise.all([freePort(), freePort()]);
    const child = spawn(process.execPath, ["--import", "tsx", "src/node.ts"], {
      cwd: ROOT,
      env: {
        PATH: process.env.PATH ?? "",
        HOME: process.env.HOME ?? "",
        PORT: String(port),
        REDIS_URL: `redis://:hunter2-password@127.0.0.1:${redisPort}`,
        PINBOARD_PASSPORT_SECRET: TEST_PASSPORT_SECRET,
        PINBOARD_LEASE_TTL_MS: "3000",
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    children.push(child);
    let output = "";
    child.stdout?.on("data", (d: Buffer) => (output += d.toString()));
    child.stderr?.on("data", (d: Buffer) => (output += d.toString()));

    const warning = await until(
      () => output.split("\n").find((l) => l.includes("redis unreachable at")) ?? null,
      8000,
      25,
    );
    expect(warning).toContain(`redis://:***@127.0.0.1:${redisPort}`);
    expect(warning).toContain("ECONNREFUSED");
    expect(warning).toContain("/readyz is 503");
    // The start banner ends with it too, rather than with the happy path alone.
    const notReady = await until(() => output.split("\n").find((l) => l.startsWith("Not ready: ")) ?? null, 8000, 25);
    expect(notReady).toMatch(
      new RegExp(
        `^Not ready: redis://:\\*\\*\\*@127\\.0\\.0\\.1:${redisPort} does not answer \\(.*ECONNREFUSED.*\\)\\. ` +
          "Requests get 503 redis unavailable and /readyz is 503 until it does; check REDIS_URL and that Redis runs\\.$",
      ),
    );
    const readyz = () =>
      fetch(`http://127.0.0.1:${port}/readyz`).then(
        (r) => r.status,
        () => 0,
      );
    await until(async () => ((await readyz()) !== 0 ? true : null), 5000, 25);
    expect(await readyz()).toBe(503);
    // Every connection error the TCP adapter logs names the address.
    const errors = output.split("\n").filter((l) => l.includes("redis error at"));
    expect(errors.length).toBeGreaterThan(0);
    for (const line of errors) expect(line).toContain(`redis://:***@127.0.0.1:${redisPort}`);

    redis = await startEmbeddedRedis({ port: redisPort, args: ["--requirepass", "hunter2-password"] });
    await until(async () => ((await readyz()) === 200 ? true : null), 8000, 50);
    expect(output).not.toContain("hunter2-password");
    expect(output).toContain(`redis connected at redis://:***@127.0.0.1:${redisPort}`);
  });

  it("REDIS_URL=http://… is refused at parse time, naming the variable and the schemes", () => {
    for (const value of ["http://127.0.0.1:6379", "https://cache.example.com", "127.0.0.1:6379"]) {
      expect(() => parseConfig({ REDIS_URL: value }), value).toThrow(ConfigError);
      try {
        parseConfig({ REDIS_URL: value });
      } catch (err) {
        expect((err as Error).message).toContain("REDIS_URL: expected a redis:// or rediss:// URL");
      }
    }
    expect(() => parseConfig({ PINBOARD_DURABLE_REDIS_URL: "http://x:1" })).toThrow(
      /PINBOARD_DURABLE_REDIS_URL: expected a redis:\/\/ or rediss:\/\//,
    );
    expect(() => parseConfig({ UPSTASH_REDIS_REST_URL: "redis://x:1", UPSTASH_REDIS_REST_TOKEN: "t" })).toThrow(
      /UPSTASH_REDIS_REST_URL: expected an http:\/\/ or https:\/\/ URL/,
    );
    expect(parseConfig({ REDIS_URL: "rediss://u:p@h:6380" }).redis.url).toBe("rediss://u:p@h:6380");
  });
});
