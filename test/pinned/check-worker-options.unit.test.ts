import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { Instance } from "../../src/pinned/types.ts";
import { checkWorkerOptions, consoleLine, type WorkerOptions } from "../../src/pinned/worker-options.ts";

/**
 * createWorker's option checks: each mistake is refused at once with the option's name, the value
 * and what it should be (a worker that started with it would fail every call, retried forever),
 * and what is left unset gets the contract's default.
 */

class Noop implements Instance {
  fetch(): Response {
    return new Response();
  }
}

const options = (extra: Partial<WorkerOptions> = {}): WorkerOptions => ({
  pinboardUrl: "http://127.0.0.1:8787",
  credential: "token",
  namespaces: { "/a": Noop },
  secret: "s".repeat(16),
  clientId: "c",
  ...extra,
});

function refusal(extra: Partial<WorkerOptions>): { name: string; message: string } {
  try {
    checkWorkerOptions(options(extra));
  } catch (err) {
    return { name: (err as Error).name, message: (err as Error).message };
  }
  throw new Error("not refused");
}
const type = (message: string) => ({ name: "TypeError", message });
const range = (message: string) => ({ name: "RangeError", message });
const plain = (message: string) => ({ name: "Error", message });

let savedClientId: string | undefined;
beforeEach(() => {
  savedClientId = process.env.CLIENT_ID;
  delete process.env.CLIENT_ID;
});
afterEach(() => {
  if (savedClientId === undefined) delete process.env.CLIENT_ID;
  else process.env.CLIENT_ID = savedClientId;
});

describe("checkWorkerOptions", () => {
  it("fills in the defaults", () => {
    const settings = checkWorkerOptions(options({ secret: undefined, clientId: undefined }));
    expect(settings).toMatchObject({
      namespaces: ["/a"],
      maxInstances: 1000,
      basePath: "",
      advertiseUrl: undefined,
      acceptance: { maxAgeS: 30, skewS: 30 },
      maxRemembered: 100_000,
      gates: { allowConcurrency: false, allowUnconfirmed: false, maxQueuedEvents: 1000 },
    });
    expect(settings.classes.get("/a")).toBe(Noop);
    expect(settings.clientId).toMatch(/^pinned-[A-Za-z0-9_-]{12}$/);
    expect([...settings.secret].length).toBeGreaterThanOrEqual(16);
    expect(settings.now).toBe(Date.now);
  });

  it("keeps what is given; the base path defaults to the advertise URL's, both without trailing slashes", () => {
    const now = () => 5;
    const logger = { info() {}, warn() {}, error() {} };
    const settings = checkWorkerOptions(
      options({
        advertiseUrl: "http://10.0.0.7:9001/w//",
        maxInstances: 0,
        attestation: { maxAgeS: 10, skewS: 0, maxRemembered: 1 },
        allowConcurrency: true,
        allowUnconfirmed: true,
        maxQueuedEvents: 1,
        now,
        logger,
      }),
    );
    expect(settings).toMatchObject({
      clientId: "c",
      maxInstances: 0,
      basePath: "/w",
      advertiseUrl: "http://10.0.0.7:9001/w",
      acceptance: { maxAgeS: 10, skewS: 0 },
      maxRemembered: 1,
      gates: { allowConcurrency: true, allowUnconfirmed: true, maxQueuedEvents: 1 },
    });
    expect(settings.now).toBe(now);
    expect(settings.log).toBe(logger);
    expect(checkWorkerOptions(options({ advertiseUrl: "http://h:1/w", basePath: "/b/" })).basePath).toBe("/b");
  });

  it("a URL option: required, with its scheme, http(s), valid, no user, query or fragment", () => {
    const url = (pinboardUrl: string) => refusal({ pinboardUrl });
    expect(url("")).toEqual(type('createWorker: pinboardUrl is required, e.g. "http://127.0.0.1:8787"'));
    expect(url("  ")).toEqual(type('createWorker: pinboardUrl is required, e.g. "http://127.0.0.1:8787"'));
    expect(refusal({ pinboardUrl: 5 as unknown as string }).message).toBe(
      'createWorker: pinboardUrl is required, e.g. "http://127.0.0.1:8787"',
    );
    expect(url("127.0.0.1:8787")).toEqual(
      type('createWorker: pinboardUrl "127.0.0.1:8787" has no scheme; write "http://127.0.0.1:8787" (or https://)'),
    );
    expect(url(" http://h")).toEqual(
      type('createWorker: pinboardUrl " http://h" has no scheme; write "http:// http://h" (or https://)'),
    );
    expect(url("http://exa mple")).toEqual(
      type('createWorker: pinboardUrl "http://exa mple" is not a valid URL, e.g. "http://127.0.0.1:8787"'),
    );
    expect(url("ftp://h")).toEqual(type('createWorker: pinboardUrl must be an http:// or https:// URL, not "ftp://h"'));
    expect(() => checkWorkerOptions(options({ pinboardUrl: "HTTPS://h" }))).not.toThrow();
    expect(url("http://u@h")).toEqual(type("createWorker: pinboardUrl must not carry a user or password"));
    expect(url("http://:p@h")).toEqual(type("createWorker: pinboardUrl must not carry a user or password"));
    expect(url("http://h/?a")).toEqual(
      type('createWorker: pinboardUrl "http://h/?a" must not have a query or fragment'),
    );
    expect(url("http://h/#f")).toEqual(
      type('createWorker: pinboardUrl "http://h/#f" must not have a query or fragment'),
    );
    expect(refusal({ advertiseUrl: "" })).toEqual(
      type('createWorker: advertiseUrl is required, e.g. "http://10.0.0.7:9001"'),
    );
  });

  it("a credential that is a non-blank string or a function", () => {
    const empty = type(
      "createWorker: credential is empty; pass a Passport credential with the pinboard:worker scope " +
        "(npm start prints PINBOARD_WORKER_TOKEN)",
    );
    expect(refusal({ credential: "" })).toEqual(empty);
    expect(refusal({ credential: " " })).toEqual(empty);
    expect(refusal({ credential: undefined as unknown as string })).toEqual(empty);
    expect(() => checkWorkerOptions(options({ credential: async () => "t" }))).not.toThrow();
  });

  it("numbers in range, each named with the value refused", () => {
    expect(refusal({ maxInstances: -1 })).toEqual(
      range("createWorker: maxInstances must be a non-negative integer, not -1"),
    );
    expect(refusal({ maxInstances: 1.5 }).message).toContain("not 1.5");
    expect(refusal({ maxInstances: Number.POSITIVE_INFINITY }).message).toContain("not Infinity");
    expect(refusal({ maxInstances: "3" as unknown as number }).message).toContain("not 3");
    expect(refusal({ activationTimeoutMs: 0 })).toEqual(
      range("createWorker: activationTimeoutMs must be a positive number, not 0"),
    );
    expect(() => checkWorkerOptions(options({ activationTimeoutMs: 0.5 }))).not.toThrow();
    expect(refusal({ activationTimeoutMs: Number.POSITIVE_INFINITY }).message).toContain("not Infinity");
    expect(refusal({ activationTimeoutMs: "3" as unknown as number }).message).toContain("positive number, not 3");
    expect(refusal({ attestation: { maxAgeS: 0 } })).toEqual(
      range("createWorker: attestation.maxAgeS must be a number above 0 to 30, not 0"),
    );
    expect(refusal({ attestation: { maxAgeS: 31 } }).message).toContain("above 0 to 30, not 31");
    expect(() => checkWorkerOptions(options({ attestation: { maxAgeS: 30, skewS: 30 } }))).not.toThrow();
    expect(refusal({ attestation: { skewS: -1 } })).toEqual(
      range("createWorker: attestation.skewS must be a number from 0 to 30, not -1"),
    );
    expect(refusal({ attestation: { skewS: 30.5 } }).message).toContain("not 30.5");
    expect(refusal({ attestation: { skewS: "1" as unknown as number } }).message).toContain("not 1");
    for (const maxRemembered of [0, 1.5, 2 ** 53])
      expect(refusal({ attestation: { maxRemembered } })).toEqual(
        range(`createWorker: attestation.maxRemembered must be a positive integer, not ${maxRemembered}`),
      );
    for (const maxQueuedEvents of [0, 2.5, 2 ** 53])
      expect(refusal({ maxQueuedEvents })).toEqual(
        range(`createWorker: maxQueuedEvents must be a positive integer, not ${maxQueuedEvents}`),
      );
  });

  it("namespaces: at least one, each a worker namespace", () => {
    expect(refusal({ namespaces: {} })).toEqual(plain("createWorker: declare at least one namespace"));
    expect(refusal({ namespaces: { a: Noop } })).toEqual(
      plain('createWorker: invalid namespace "a" (expected "/name")'),
    );
    expect(refusal({ namespaces: { "/a": Noop, "/registry": Noop } }).message).toBe(
      'createWorker: invalid namespace "/registry" (expected "/name")',
    );
  });

  it("a secret of at least 16 code points", () => {
    expect(refusal({ secret: "s".repeat(15) })).toEqual(plain("createWorker: secret must have at least 16 characters"));
    expect(refusal({ secret: "😀".repeat(8) }).message).toBe("createWorker: secret must have at least 16 characters");
  });

  it("a clientId of 1 to 256 characters, else CLIENT_ID, each named when wrong", () => {
    expect(checkWorkerOptions(options({ clientId: "x".repeat(256) })).clientId).toHaveLength(256);
    expect(refusal({ clientId: "x".repeat(257) })).toEqual(
      type("createWorker: clientId must be a string of 1 to 256 characters, not 257 characters"),
    );
    expect(refusal({ clientId: "" }).message).toBe(
      'createWorker: clientId must be a string of 1 to 256 characters, not ""',
    );
    expect(refusal({ clientId: 7 as unknown as string }).message).toBe(
      "createWorker: clientId must be a string of 1 to 256 characters, not a number",
    );
    process.env.CLIENT_ID = "from-env";
    expect(checkWorkerOptions(options({ clientId: undefined })).clientId).toBe("from-env");
    expect(checkWorkerOptions(options({ clientId: "opt" })).clientId).toBe("opt");
    process.env.CLIENT_ID = "y".repeat(257);
    expect(refusal({ clientId: undefined }).message).toBe(
      "createWorker: CLIENT_ID must be a string of 1 to 256 characters, not 257 characters",
    );
    process.env.CLIENT_ID = "";
    expect(checkWorkerOptions(options({ clientId: undefined })).clientId).toMatch(/^pinned-/);
  });
});

describe("the default logger", () => {
  it("prints each level's console line to the console's own stream", () => {
    const { log } = checkWorkerOptions(options());
    const printed: string[] = [];
    const spies = (["log", "warn", "error"] as const).map((method) =>
      vi.spyOn(console, method).mockImplementation((line: string) => printed.push(`${method} ${line}`)),
    );
    try {
      log.info("up", { port: 1 });
      log.warn("slow");
      log.error("failed", { error: "boom" });
    } finally {
      for (const spy of spies) spy.mockRestore();
    }
    expect(printed).toEqual(["log [pinned] up port=1", "warn [pinned] slow", "error [pinned] failed: boom"]);
  });
});

describe("consoleLine", () => {
  it("no fields: the message alone; a field's non-string value as JSON; an error that is not a string as JSON", () => {
    expect(consoleLine("started")).toBe("[pinned] started");
    expect(consoleLine("m", { n: 1, s: "x", o: { a: 1 } })).toBe('[pinned] m n=1 s=x o={"a":1}');
    expect(consoleLine("m", { error: { code: 1 } })).toBe('[pinned] m: {"code":1}');
  });
});
