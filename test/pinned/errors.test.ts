import { spawn } from "node:child_process";
import { createServer, type Server } from "node:net";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ChallengeState } from "../../src/pinned/challenge.ts";
import { createWorker, RedisDurabilityStore } from "../../src/pinned/index.ts";
import { PinboardClient } from "../../src/pinned/pinboard-client.ts";
import { Registration } from "../../src/pinned/registration.ts";
import { freePort } from "../../src/runtime/node/process/free-port.ts";
import { Echo } from "../support/echo-instance.ts";
import { type Fleet, startFleet } from "../support/fleet.ts";
import { consoleFormatLogger, memoryLogger, startLocalWorker, until } from "../support/local-worker.ts";
import { startTestRedis } from "../support/redis.ts";
import { silentRegistrationHooks } from "../support/registration-hooks.ts";

/**
 * A newcomer's mistakes and outages, as the worker library reports them: every call to Pinboard
 * that gets no answer names the URL and the cause; configuration errors fail fast in createWorker
 * or listen() with a message that says what to do; a durability store that refuses connections
 * fails the activation within activationTimeoutMs and the log names the store (password redacted).
 */

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const lineWith = (lines: string[], text: string) => lines.find((l) => l.includes(text));

describe("calls to Pinboard that get no answer name the URL and the cause", () => {
  it("register: retried, each failure one line naming the URL, ECONNREFUSED and what to check", async () => {
    const port = await freePort(); // nothing listens here
    const logger = consoleFormatLogger();
    const worker = createWorker({
      pinboardUrl: `http://127.0.0.1:${port}`,
      credential: "token",
      namespaces: { "/echo": Echo },
      logger,
    });
    const listening = await worker.listen({ port: 0 });
    const started = worker.start();
    started.catch(() => {});
    try {
      const line = await until(() => lineWith(logger.lines, "register failed, retrying"));
      expect(line).toMatch(/^warn \[pinned\] register failed, retrying attempt=1 retryInMs=\d+: /);
      expect(line).toContain(
        `register: no answer from http://127.0.0.1:${port}/registry/register (ECONNREFUSED) — cannot reach ` +
          `Pinboard at http://127.0.0.1:${port}: is Pinboard running, and is the pinboardUrl option (PINBOARD_URL) ` +
          "right (host, port, http:// or https://)?",
      );
      expect(line.endsWith("?")).toBe(true); // one line: no object printed after it
    } finally {
      await worker.stop();
      await listening.close();
    }
    await expect(started).rejects.toThrow(/stopped/);
  });

  it("release: names the URL and the cause", async () => {
    const port = await freePort();
    const logger = memoryLogger();
    const registration = new Registration(
      new PinboardClient({ pinboardUrl: `http://127.0.0.1:${port}/pb/`, credential: "token" }),
      new ChallengeState(),
      { clientId: "c", secret: "s".repeat(32), namespaces: ["/echo"], advertiseUrl: () => "http://127.0.0.1:1" },
      silentRegistrationHooks(),
      { log: logger, now: Date.now },
    );
    registration.sessionId = "session-1";
    expect(await registration.release([{ ns: "/echo", id: "a", epoch: "3" }])).toBe(false);
    expect(lineWith(logger.lines, "release failed")).toContain(
      `release: no answer from http://127.0.0.1:${port}/pb/registry/release (ECONNREFUSED)`,
    );
    expect(lineWith(logger.lines, "release: gave up after 3 tries")).toContain(
      `http://127.0.0.1:${port}/pb/registry/release`,
    );
  });

  describe("against a real Pinboard", () => {
    let fleet: Fleet;
    beforeAll(async () => {
      fleet = await startFleet({ workers: 0 });
    }, 30_000);
    afterAll(async () => {
      await fleet?.close().catch(() => {});
    });

    it("a refusal names the URL: a wrong base path is register: 404 from …/registry/register, and says so", async () => {
      const worker = createWorker({
        pinboardUrl: `${fleet.pb.url}/nope`,
        credential: await fleet.pb.workerCredential(),
        namespaces: { "/echo": Echo },
        logger: memoryLogger(),
      });
      const listening = await worker.listen({ port: 0 });
      try {
        await expect(worker.start()).rejects.toThrow(
          /^register: 404 .*from http:\/\/127\.0\.0\.1:\d+\/nope\/registry\/register — the Pinboard URL http:\/\/127\.0\.0\.1:\d+\/nope probably misses or has an extra base path/,
        );
      } finally {
        await listening.close();
      }
    });

    it("heartbeat and deregister, once Pinboard is gone, name the URL and ECONNREFUSED", async () => {
      const logger = memoryLogger();
      const { worker } = await fleet.addWorker({ logger });
      expect(worker.sessionId).toBeTruthy();
      fleet.pb.kill();
      await until(() => fleet.pb.process.exitCode !== null || fleet.pb.process.signalCode !== null);

      await worker.drain(); // a heartbeat now
      expect(lineWith(logger.lines, "heartbeat failed")).toContain(
        `heartbeat: no answer from ${fleet.pb.url}/registry/heartbeat (ECONNREFUSED)`,
      );
      await worker.stop(); // deregister: three tries
      expect(lineWith(logger.lines, "deregister failed")).toContain(
        `deregister: no answer from ${fleet.pb.url}/registry/deregister (ECONNREFUSED)`,
      );
      fleet.workers.length = 0;
    });
  });
});

describe("configuration errors fail fast and say what to do", () => {
  const base = { credential: "token", namespaces: { "/echo": Echo } };

  it("a pinboardUrl without a scheme", () => {
    expect(() => createWorker({ ...base, pinboardUrl: "127.0.0.1:8787" })).toThrow(
      'createWorker: pinboardUrl "127.0.0.1:8787" has no scheme; write "http://127.0.0.1:8787" (or https://)',
    );
    expect(() => createWorker({ ...base, pinboardUrl: "localhost:8787" })).toThrow(
      /pinboardUrl "localhost:8787" has no scheme/,
    );
    expect(() => createWorker({ ...base, pinboardUrl: "" })).toThrow(
      'createWorker: pinboardUrl is required, e.g. "http://127.0.0.1:8787"',
    );
    expect(() => createWorker({ ...base, pinboardUrl: undefined as unknown as string })).toThrow(
      /pinboardUrl is required/,
    );
    expect(() => createWorker({ ...base, pinboardUrl: "ftp://127.0.0.1:8787" })).toThrow(
      /pinboardUrl must be an http:\/\/ or https:\/\/ URL/,
    );
    expect(() => createWorker({ ...base, pinboardUrl: "http://user:pw@127.0.0.1:8787" })).toThrow(
      /must not carry a user or password/,
    );
  });

  it("an invalid advertiseUrl, an empty credential, a bad number", () => {
    const pinboardUrl = "http://127.0.0.1:8787";
    expect(() => createWorker({ ...base, pinboardUrl, advertiseUrl: "10.0.0.7:9001" })).toThrow(
      'createWorker: advertiseUrl "10.0.0.7:9001" has no scheme; write "http://10.0.0.7:9001" (or https://)',
    );
    expect(() => createWorker({ ...base, pinboardUrl, advertiseUrl: "http://exa mple:9001" })).toThrow(
      /advertiseUrl "http:\/\/exa mple:9001" is not a valid URL/,
    );
    expect(() => createWorker({ ...base, pinboardUrl, credential: "" })).toThrow(
      /credential is empty; pass a Passport credential with the pinboard:worker scope/,
    );
    expect(() => createWorker({ ...base, pinboardUrl, maxInstances: -1 })).toThrow(
      "createWorker: maxInstances must be a non-negative integer, not -1",
    );
    expect(() => createWorker({ ...base, pinboardUrl, activationTimeoutMs: 0 })).toThrow(
      /activationTimeoutMs must be a positive number/,
    );
    expect(() =>
      createWorker({ ...base, pinboardUrl, maxInstances: 0, advertiseUrl: "https://w.example/base" }),
    ).not.toThrow();
  });

  it("clientId: the option wins, then CLIENT_ID, then a random one; an empty or too long one is refused", () => {
    const pinboardUrl = "http://127.0.0.1:8787";
    const saved = process.env.CLIENT_ID;
    try {
      process.env.CLIENT_ID = "worker-b";
      expect(createWorker({ ...base, pinboardUrl }).clientId).toBe("worker-b");
      expect(createWorker({ ...base, pinboardUrl, clientId: "worker-a" }).clientId).toBe("worker-a");
      // `clientId: process.env.CLIENT_ID` with CLIENT_ID unset passes undefined: as if not given.
      expect(createWorker({ ...base, pinboardUrl, clientId: undefined }).clientId).toBe("worker-b");
      process.env.CLIENT_ID = "";
      expect(createWorker({ ...base, pinboardUrl }).clientId).toMatch(/^pinned-[\w-]+$/);
      delete process.env.CLIENT_ID;
      const random = [createWorker({ ...base, pinboardUrl }).clientId, createWorker({ ...base, pinboardUrl }).clientId];
      expect(random[0]).toMatch(/^pinned-[\w-]+$/);
      expect(random[0]).not.toBe(random[1]);
      expect(() => createWorker({ ...base, pinboardUrl, clientId: "" })).toThrow(
        'createWorker: clientId must be a string of 1 to 256 characters, not ""',
      );
      expect(() => createWorker({ ...base, pinboardUrl, clientId: "w".repeat(257) })).toThrow(
        "createWorker: clientId must be a string of 1 to 256 characters, not 257 characters",
      );
      expect(createWorker({ ...base, pinboardUrl, clientId: "w".repeat(256) }).clientId).toHaveLength(256);
      process.env.CLIENT_ID = "w".repeat(300);
      expect(() => createWorker({ ...base, pinboardUrl })).toThrow(
        "createWorker: CLIENT_ID must be a string of 1 to 256 characters, not 300 characters",
      );
    } finally {
      if (saved === undefined) delete process.env.CLIENT_ID;
      else process.env.CLIENT_ID = saved;
    }
  });

  it("RedisDurabilityStore without a Redis URL (DURABLE_REDIS_URL unset), or with one that is not a URL", () => {
    const noRedis =
      "RedisDurabilityStore: no Redis given: set the redis option to a redis:// URL " +
      "(DURABLE_REDIS_URL in .pinboard/dev.env after npm start) or an ioredis client";
    const given = (redis: unknown) => () => new RedisDurabilityStore({ redis } as { redis: string });
    expect(given(undefined)).toThrow(noRedis);
    expect(given("")).toThrow(noRedis);
    expect(given(null)).toThrow(noRedis);
    expect(() => new RedisDurabilityStore(undefined as unknown as { redis: string })).toThrow(noRedis);
    expect(given(6379)).toThrow(`${noRedis}, not a number`);
    expect(given("127.0.0.1:6379")).toThrow(
      'RedisDurabilityStore: the redis option "127.0.0.1:6379" has no scheme; write "redis://127.0.0.1:6379"',
    );
    expect(given("user:hunter2@redis.internal:6379")).toThrow(
      'RedisDurabilityStore: the redis option "user:***@redis.internal:6379" has no scheme; write "redis://user:***@redis.internal:6379"',
    );
    expect(given("http://127.0.0.1:6379")).toThrow(
      'RedisDurabilityStore: the redis option must be a redis:// or rediss:// URL, not "http://127.0.0.1:6379"',
    );
    expect(given("redis://exa mple:6379")).toThrow(
      'RedisDurabilityStore: the redis option "redis://exa mple:6379" is not a valid URL, e.g. redis://127.0.0.1:6379',
    );
    expect(given({ host: "127.0.0.1", port: 6379 })).toThrow(
      "RedisDurabilityStore: the redis option must be a redis:// URL or an ioredis client (Redis or Cluster), not another object",
    );
  });

  it("start() with no URL to advertise (no listen(), no advertiseUrl) rejects at once", async () => {
    const logger = memoryLogger();
    const worker = createWorker({ ...base, pinboardUrl: "http://127.0.0.1:8787", logger });
    await expect(worker.start()).rejects.toThrow(
      "start(): no URL to advertise: call listen() first, or set the advertiseUrl option (where Pinboard reaches this worker)",
    );
    expect(logger.lines).toEqual([]); // not retried
  });

  it("listen() on a port in use", async () => {
    const taken: Server = createServer();
    await new Promise<void>((resolve) => taken.listen(0, "127.0.0.1", resolve));
    const port = (taken.address() as { port: number }).port;
    try {
      const worker = createWorker({ ...base, pinboardUrl: "http://127.0.0.1:8787" });
      await expect(worker.listen({ port })).rejects.toThrow(
        `listen: port ${port} is in use (EADDRINUSE); pick another PORT or 0 for a free one`,
      );
      await expect(worker.listen({ port: 70_000 })).rejects.toThrow(/listen: port must be an integer from 0 to 65535/);
    } finally {
      await new Promise((resolve) => taken.close(resolve));
    }
  });

  it("examples/worker.ts with PINBOARD_URL=127.0.0.1:8787 exits at once with the message", async () => {
    const child = spawn(process.execPath, ["--import", "tsx", "examples/worker.ts"], {
      cwd: ROOT,
      env: {
        PATH: process.env.PATH ?? "",
        HOME: process.env.HOME ?? "",
        PINBOARD_URL: "127.0.0.1:8787",
        PINBOARD_WORKER_TOKEN: "token",
        DURABLE_REDIS_URL: "redis://127.0.0.1:1",
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    child.stdout.on("data", (d: Buffer) => (output += d.toString()));
    child.stderr.on("data", (d: Buffer) => (output += d.toString()));
    const kill = setTimeout(() => child.kill("SIGKILL"), 8000);
    const code = await new Promise<number | null>((resolve) => child.once("exit", resolve));
    clearTimeout(kill);
    expect(code, output).toBe(2);
    expect(output).toContain(
      'examples/worker.ts: createWorker: pinboardUrl "127.0.0.1:8787" has no scheme; write "http://127.0.0.1:8787"',
    );
    expect(output).not.toMatch(/\n\s+at /); // no stack
  }, 10_000);
});

describe("a durability store that refuses connections", () => {
  it("answers 503 activation failed within activationTimeoutMs; the log names the store, password redacted, and the cause", async () => {
    const t = await startTestRedis({ single: true });
    const port = new URL(t.url).port;
    await t.stopServer(); // a real redis-server, gone: its port refuses connections
    await t.stop().catch(() => {});
    const store = new RedisDurabilityStore({ redis: `redis://:hunter2@127.0.0.1:${port}` });
    expect(store.name).toBe(`redis://:***@127.0.0.1:${port}`);
    const local = await startLocalWorker({ durability: store, activationTimeoutMs: 700 });
    try {
      const first = await local.call("/counter/a");
      expect(first.status).toBe(503);
      expect(first.headers.get("retry-after")).toBe("1");
      expect(first.headers.get("pinned-refusal")).toBeNull();
      expect(await first.json()).toEqual({ detail: "activation failed" });

      // ioredis's reconnect backoff grows (to 5 s): unbounded, a request would now wait many seconds.
      await new Promise((r) => setTimeout(r, 2500));
      const started = Date.now();
      const second = await local.call("/counter/b");
      const elapsed = Date.now() - started;
      expect(second.status).toBe(503);
      expect(await second.json()).toEqual({ detail: "activation failed" });
      expect(elapsed).toBeLessThan(1500);

      const failures = local.logger.lines.filter((l) => l.startsWith("error activation failed"));
      expect(failures).toHaveLength(2);
      for (const line of failures) {
        expect(line).toContain(`durability store redis://:***@127.0.0.1:${port}`);
        expect(line).toContain("ECONNREFUSED");
        expect(line).not.toContain("hunter2");
        expect(line).not.toMatch(/\bat .*node_modules/); // no ioredis stack
      }
      expect(failures[1]).toContain("no answer within 700 ms (activationTimeoutMs)");
    } finally {
      await local.close();
      await store.close();
    }
  }, 10_000);
});
