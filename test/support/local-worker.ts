import { createHmac } from "node:crypto";
import { signAttestation } from "../../src/contract/attestation.ts";
import { createWorker, type PinnedWorker, type WorkerOptions } from "../../src/pinned/index.ts";
import type { Listening } from "../../src/pinned/node-server.ts";
import type { PinnedLogger } from "../../src/pinned/types.ts";
import { consoleLine } from "../../src/pinned/worker-options.ts";
import { Counter, Room, Slow } from "./sample-instances.ts";
import { useForFile } from "./use-for-file.ts";

export const SECRET = "pinned-test-secret-0123456789abcdef";
export const LOCAL_AUD = "local-test-audience";

/** Lines as the library's console logger prints them (`[pinned] message key=value …: error`), after the level. */
export function consoleFormatLogger(): PinnedLogger & { lines: string[] } {
  const lines: string[] = [];
  const push = (level: string) => (message: string, fields?: Record<string, unknown>) =>
    lines.push(`${level} ${consoleLine(message, fields)}`);
  return { lines, info: push("info"), warn: push("warn"), error: push("error") };
}

/** Collects log lines instead of printing them; tests may assert on them. */
export function memoryLogger(): PinnedLogger & { lines: string[] } {
  const lines: string[] = [];
  const push = (level: string) => (message: string, fields?: Record<string, unknown>) =>
    lines.push(`${level} ${message} ${fields ? JSON.stringify(fields) : ""}`);
  return { lines, info: push("info"), warn: push("warn"), error: push("error") };
}

export async function attestation(
  options: {
    aud?: string;
    secret?: string;
    nowSeconds?: number;
    caller?: string;
    depth?: number;
    /** The request it names, as Pinboard binds it: method, target relative to the advertise URL, epoch. */
    htm?: string;
    htu?: string;
    epoch?: string;
  } = {},
): Promise<string> {
  const { htm, htu, epoch } = options;
  return signAttestation(
    options.secret ?? SECRET,
    { aud: options.aud ?? LOCAL_AUD, caller: options.caller, depth: options.depth, htm, htu, epoch },
    options.nowSeconds ?? Date.now() / 1000,
  );
}

/**
 * An attestation as a Pinboard before single-use ids signed it: the claims given (aud LOCAL_AUD,
 * iat now, exp iat + 30 by default), signed with SECRET, and no jti.
 */
export function attestationWithoutId(claims: Record<string, unknown> = {}): string {
  const iat = Math.floor(Date.now() / 1000);
  const part = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url");
  const input = `${part({ alg: "HS256", typ: "pinboard+jwt" })}.${part({ aud: LOCAL_AUD, iat, exp: iat + 30, ...claims })}`;
  return `${input}.${createHmac("sha256", SECRET).update(input).digest("base64url")}`;
}

export interface LocalWorker {
  worker: PinnedWorker;
  listening: Listening;
  url: string;
  logger: ReturnType<typeof memoryLogger>;
  /**
   * A request to the worker with a fresh attestation for the local audience naming it (method,
   * path, epoch), unless `attestation` says otherwise.
   */
  call(
    path: string,
    options?: {
      method?: string;
      epoch?: string | null;
      attestation?: string | null;
      headers?: Record<string, string>;
      body?: string;
    },
  ): Promise<Response>;
  close(): Promise<void>;
}

/**
 * Local workers for the whole test file, one per name, each started on its overrides before the
 * tests (`ready` hands them over by the same names) and closed after them.
 */
export function useLocalWorkers<K extends string>(
  overrides: Record<K, Partial<WorkerOptions>>,
  ready: (workers: Record<K, LocalWorker>) => void,
): void {
  useForFile(
    async () => {
      const workers = {} as Record<K, LocalWorker>;
      for (const name of Object.keys(overrides) as K[]) workers[name] = await startLocalWorker(overrides[name]);
      return workers;
    },
    async (workers) => {
      await Promise.all(Object.values<LocalWorker>(workers).map((w) => w.close()));
    },
    ready,
  );
}

/**
 * A worker served on loopback, not registered anywhere: it accepts attestations for LOCAL_AUD
 * signed with SECRET. Pinboard URL points at a closed port unless the test overrides it.
 */
export async function startLocalWorker(overrides: Partial<WorkerOptions> = {}): Promise<LocalWorker> {
  const logger = memoryLogger();
  const worker = createWorker({
    pinboardUrl: "http://127.0.0.1:9",
    credential: "unused",
    secret: SECRET,
    localAudience: LOCAL_AUD,
    namespaces: { "/counter": Counter, "/room": Room, "/slow": Slow },
    logger,
    ...overrides,
  });
  const listening = await worker.listen({ port: 0 });
  const basePath = (overrides.basePath ?? "").replace(/\/+$/, "");
  const call: LocalWorker["call"] = async (path, options = {}) => {
    const headers: Record<string, string> = { ...options.headers };
    const method = options.method ?? "GET";
    const epoch = options.epoch === undefined ? "10" : options.epoch;
    const token =
      options.attestation === undefined
        ? await attestation({ htm: method, htu: path.slice(basePath.length), epoch: epoch ?? undefined })
        : options.attestation;
    if (token !== null) headers["Pinboard-Attestation"] = token;
    if (epoch !== null) headers["Pinboard-Epoch"] = epoch;
    return fetch(`${listening.url}${path}`, { method, headers, body: options.body });
  };
  return {
    worker,
    listening,
    url: listening.url,
    logger,
    call,
    async close() {
      await worker.stop();
      await listening.close();
    },
  };
}

export async function until<T>(probe: () => T | Promise<T>, timeoutMs = 10_000, stepMs = 20): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value as NonNullable<T>;
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, stepMs));
  }
}
