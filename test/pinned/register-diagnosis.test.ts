import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createWorker, type PinnedWorker, type WorkerOptions } from "../../src/pinned/index.ts";
import type { Listening } from "../../src/pinned/node-server.ts";
import type { PinnedLogger } from "../../src/pinned/types.ts";
import { consoleLine } from "../../src/pinned/worker-options.ts";
import { freePort } from "../../src/runtime/node/process/free-port.ts";
import { Echo } from "../support/echo-instance.ts";
import { type Fleet, startFleet } from "../support/fleet.ts";
import { startLatencyProxy } from "../support/latency-proxy.ts";
import { until } from "../support/local-worker.ts";

/**
 * A newcomer's registration mistakes against a real Pinboard, as the worker library reports them:
 * Pinboard's status and error string as sent, then what they likely mean and what to change. A
 * failed probe of the advertise URL is probed again from the worker, which says what it found;
 * every retry of a register is one log line that names the delay before the next try.
 */

/** Pinboard's own probe gives up after this long: a slow advertise URL fails it. */
const VERIFY_TIMEOUT_MS = 300;
const SETTING = "the pinboardUrl option (PINBOARD_URL)";
const ADVERTISE_SETTING = "the advertiseUrl option (ADVERTISE_URL; default: the listen() URL)";

interface LogEntry {
  level: string;
  /** The line the library's console logger prints for it, without its `[pinned] ` mark. */
  message: string;
  fields: Record<string, unknown> | undefined;
}

function recordingLogger(): PinnedLogger & { entries: LogEntry[] } {
  const entries: LogEntry[] = [];
  const push = (level: string) => (message: string, fields?: Record<string, unknown>) =>
    entries.push({ level, message: consoleLine(message, fields).slice("[pinned] ".length), fields });
  return { entries, info: push("info"), warn: push("warn"), error: push("error") };
}

const retries = (logger: { entries: LogEntry[] }) =>
  logger.entries.filter((e) => e.message.startsWith("register failed, retrying"));

/** A worker's first `count` register retries as its logger got them; the worker is closed, its start() stopped. */
async function firstRetries(options: Partial<WorkerOptions>, count: number, timeoutMs: number): Promise<LogEntry[]> {
  const w = await trialWorker(options);
  const started = w.start();
  try {
    await until(() => retries(w.logger).length >= count, timeoutMs);
  } finally {
    await w.close();
  }
  await expect(started).rejects.toThrow(/stopped/);
  return retries(w.logger).slice(0, count);
}

/** A worker's first register retry, as its console logger prints it. */
async function firstRetryMessage(options: Partial<WorkerOptions>): Promise<string> {
  return (await firstRetries(options, 1, 10_000))[0]!.message;
}

let fleet: Fleet;
beforeAll(async () => {
  fleet = await startFleet({
    workers: 0,
    env: { PINBOARD_BASE_PATH: "/pb", PINBOARD_VERIFY_TIMEOUT_MS: String(VERIFY_TIMEOUT_MS) },
  });
}, 30_000);
afterAll(async () => {
  await fleet?.close().catch(() => {});
});

interface TrialWorker {
  worker: PinnedWorker;
  listening: Listening;
  logger: ReturnType<typeof recordingLogger>;
  /** worker.start(), its rejection caught for the test to await. */
  start(): Promise<void>;
  close(): Promise<void>;
}

async function trialWorker(overrides: Partial<WorkerOptions> = {}, port = 0): Promise<TrialWorker> {
  const logger = recordingLogger();
  const worker = createWorker({
    pinboardUrl: fleet.pb.url,
    credential: await fleet.pb.workerCredential(),
    namespaces: { "/echo": Echo },
    logger,
    ...overrides,
  });
  const listening = await worker.listen({ port });
  return {
    worker,
    listening,
    logger,
    start() {
      const started = worker.start();
      started.catch(() => {});
      return started;
    },
    async close() {
      await worker.stop().catch(() => {});
      await listening.close();
    },
  };
}

describe("a Pinboard URL with a wrong base path (404 on /registry/*)", () => {
  it("misses it: register fails at once, naming the URL as configured and the setting", async () => {
    const origin = `http://127.0.0.1:${fleet.pb.port}`;
    const w = await trialWorker({ pinboardUrl: origin });
    try {
      await expect(w.start()).rejects.toThrow(
        `register: 404 not found from ${origin}/registry/register — the Pinboard URL ${origin} probably misses ` +
          `or has an extra base path (it has no path): set ${SETTING} to Pinboard's origin plus its ` +
          "PINBOARD_BASE_PATH if it sets one, e.g. http://127.0.0.1:8787/pinboard",
      );
    } finally {
      await w.close();
    }
  });

  it("adds one: the path is read as a namespace (404 unknown namespace), and the hint names the path", async () => {
    const url = `${fleet.pb.url}/nope`;
    const w = await trialWorker({ pinboardUrl: url });
    try {
      await expect(w.start()).rejects.toThrow(
        `register: 404 unknown namespace from ${url}/registry/register — the Pinboard URL ${url} probably ` +
          `misses or has an extra base path (it has the path /pb/nope): set ${SETTING}`,
      );
    } finally {
      await w.close();
    }
  });
});

describe("a refused credential says why and what to pass", () => {
  it("401: malformed, expired or signed with another key", async () => {
    const w = await trialWorker({ credential: "not-a-jwt" });
    try {
      await expect(w.start()).rejects.toThrow(
        `register: 401 unauthorized from ${fleet.pb.url}/registry/register — Pinboard does not accept the ` +
          "credential: it is malformed, expired, or signed with another key than Pinboard's " +
          "(PINBOARD_PASSPORT_SECRET or PINBOARD_PASSPORT_JWKS)",
      );
    } finally {
      await w.close();
    }
  });

  it("403 forbidden: the register needs the pinboard:worker scope (an operator credential has not)", async () => {
    const w = await trialWorker({ credential: await fleet.pb.operatorCredential() });
    try {
      await expect(w.start()).rejects.toThrow(
        `register: 403 forbidden from ${fleet.pb.url}/registry/register — the credential lacks the ` +
          "pinboard:worker scope every worker route (/registry/register, heartbeat, …) needs " +
          "(an operator credential has pinboard:operator)",
      );
    } finally {
      await w.close();
    }
  });

  it("403 namespace not allowed: names the claim field that refused it", async () => {
    const w = await trialWorker({ credential: await fleet.pb.workerCredential({ namespaces: ["/other"] }) });
    try {
      await expect(w.start()).rejects.toThrow(
        /^register: 403 namespace not allowed: \/echo from .* — the credential's pinboard claim does not allow it \(its namespaces\)/,
      );
    } finally {
      await w.close();
    }
  });

  it("a credential function that throws: each retry says so, not that Pinboard did not answer", async () => {
    const message = await firstRetryMessage({
      credential: () => {
        throw new Error("token service down");
      },
    });
    expect(message).toMatch(
      /^register failed, retrying attempt=1 retryInMs=\d+: register: the credential function threw: token service down — it must return a Passport credential with the pinboard:worker scope$/,
    );
  });

  it("409 client belongs to another account: pick another clientId", async () => {
    const clientId = `taken-${Date.now()}`;
    const first = await trialWorker({ clientId });
    const second = await trialWorker({
      clientId,
      credential: await fleet.pb.workerCredential({}, { account: "another-account" }),
    });
    try {
      await first.start();
      await expect(second.start()).rejects.toThrow(
        "register: 409 client belongs to another account from " +
          `${fleet.pb.url}/registry/register — another account registered this clientId: pick another with the ` +
          "clientId option (CLIENT_ID)",
      );
    } finally {
      await second.close();
      await first.close();
    }
  });
});

describe("Pinboard could not probe the advertise URL (400 registration probe failed)", () => {
  it("nothing answers there: each retry is one line with the probed URL, the self-probe's error and a growing delay", async () => {
    const closed = await freePort();
    const lines = await firstRetries({ advertiseUrl: `http://127.0.0.1:${closed}` }, 4, 20_000);
    const delays: number[] = [];
    for (const [i, entry] of lines.entries()) {
      // A logger of the user's own gets the same as fields; the console's is one line.
      expect(entry.fields).toMatchObject({ attempt: i + 1, retryInMs: expect.any(Number), error: expect.any(String) });
      expect(entry.message).not.toMatch(/[\r\n]/);
      const match = entry.message.match(/^register failed, retrying attempt=(\d+) retryInMs=(\d+): (.*)$/);
      expect(match, entry.message).not.toBeNull();
      expect(Number(match![1])).toBe(i + 1);
      delays.push(Number(match![2]));
      expect(match![3]).toBe(
        `register: 400 registration probe failed from ${fleet.pb.url}/registry/register — Pinboard could not ` +
          `reach this worker at http://127.0.0.1:${closed}/_pinned/challenge; probing it from here: connect ` +
          `ECONNREFUSED 127.0.0.1:${closed} — is ${ADVERTISE_SETTING} right (host, port, scheme) and reachable from Pinboard?`,
      );
    }
    // Jittered exponential backoff from 250 ms: each delay within [½, 1] of 250 × 2^attempt.
    for (const [i, delay] of delays.entries()) {
      expect(delay).toBeGreaterThanOrEqual(125 * 2 ** i);
      expect(delay).toBeLessThanOrEqual(250 * 2 ** i);
    }
    expect(delays[3]).toBeGreaterThan(delays[0]!);
  }, 30_000);

  it("this worker answers there from here: Pinboard cannot reach it; once it can, the retry registers", async () => {
    // The advertise URL answers, but slower than Pinboard's probe waits: Pinboard alone fails.
    const port = await freePort();
    const proxy = await startLatencyProxy(port, VERIFY_TIMEOUT_MS + 100);
    const advertised = `http://127.0.0.1:${proxy.port}`;
    const w = await trialWorker({ advertiseUrl: advertised }, port);
    const started = w.start();
    try {
      await until(() => retries(w.logger).length >= 1, 10_000);
      proxy.delayMs = 0;
      await started;
      expect(w.worker.sessionId).toBeTruthy();
    } finally {
      await w.close();
      await proxy.close();
    }
    const line = retries(w.logger)[0]!.message;
    expect(line).toContain(
      `register: 400 registration probe failed from ${fleet.pb.url}/registry/register — Pinboard could not reach ` +
        `this worker at ${advertised}/_pinned/challenge; this worker answers there from here (in `,
    );
    expect(line).toMatch(
      / \(in \d+ ms\), so Pinboard cannot reach it: the advertise URL must be reachable from Pinboard's host \(not 127\.0\.0\.1 or localhost when Pinboard runs on another machine or in a container\): check firewalls and container networks, and that the worker answers within Pinboard's PINBOARD_VERIFY_TIMEOUT_MS \(default 2500 ms\)$/,
    );
  });

  it("something else answers there: says what answered", async () => {
    const origin = `http://127.0.0.1:${fleet.pb.port}`; // Pinboard itself, outside its base path
    const message = await firstRetryMessage({ advertiseUrl: origin });
    expect(message).toContain(
      `— Pinboard could not reach this worker at ${origin}/_pinned/challenge; probing it from here: something else ` +
        `answers there (HTTP 404 {"error":"not found"}), not this worker's challenge route: check the host, port ` +
        `and path of ${ADVERTISE_SETTING}`,
    );
  });

  it("another pinned worker answers there: says so", async () => {
    const other = await trialWorker();
    const message = await firstRetryMessage({ advertiseUrl: other.listening.url }).finally(() => other.close());
    expect(message).toContain(
      `— Pinboard could not reach this worker at ${other.listening.url}/_pinned/challenge; probing it from here: ` +
        `another pinned worker answers there (HTTP 403 {"detail":"invalid proxy secret"}), not this one: ` +
        `${ADVERTISE_SETTING} names another worker's host or port`,
    );
  });
});
