/**
 * Calls to Pinboard's worker routes. Each call answers { status, body } for any HTTP answer
 * (the caller decides what a status means) and throws only when no answer arrived.
 */
import { parseJsonObject } from "../contract/json-text.ts";

export type Credential = string | (() => string | Promise<string>);

export interface PinboardAnswer {
  status: number;
  body: Record<string, unknown>;
}

export interface PinboardClientOptions {
  pinboardUrl: string;
  credential: Credential;
  fetch?: typeof fetch;
  timeoutMs?: number;
}

export class PinboardClient {
  private readonly base: string;
  private readonly fetch: typeof fetch;
  private readonly timeoutMs: number;

  constructor(private readonly options: PinboardClientOptions) {
    this.base = options.pinboardUrl.replace(/\/+$/, "");
    this.fetch = options.fetch ?? globalThis.fetch.bind(globalThis);
    this.timeoutMs = options.timeoutMs ?? 10_000;
  }

  /** Pinboard's URL as configured (the pinboardUrl option). */
  get pinboardUrl(): string {
    return this.options.pinboardUrl;
  }

  private async token(): Promise<string> {
    const c = this.options.credential;
    if (typeof c !== "function") return c;
    let token: unknown;
    try {
      token = await c();
    } catch (err) {
      throw new CredentialError(
        `the credential function threw: ${err instanceof Error ? err.message : String(err)}`,
        err,
      );
    }
    if (typeof token !== "string" || token.trim() === "") {
      throw new CredentialError(`the credential function returned ${JSON.stringify(token) ?? String(token)}`);
    }
    return token;
  }

  /** The URL a call to `path` goes to. */
  url(path: string): string {
    return `${this.base}${path}`;
  }

  async post(path: string, body: unknown): Promise<PinboardAnswer> {
    const controller = new AbortController();
    const timer = setTimeout(
      () => controller.abort(new PinboardTimeoutError(`timed out after ${this.timeoutMs} ms`)),
      this.timeoutMs,
    );
    try {
      const token = await this.token();
      const response = await this.fetch(this.url(path), {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        body: JSON.stringify(body),
        redirect: "manual",
        signal: controller.signal,
      });
      return { status: response.status, body: parseJsonObject(await response.text()) ?? {} };
    } finally {
      clearTimeout(timer);
    }
  }
}

/** A call to Pinboard that got no answer within the client's timeout. */
export class PinboardTimeoutError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "TimeoutError";
  }
}

/** A credential function that threw or returned no credential: the call was not made. */
export class CredentialError extends Error {
  constructor(message: string, cause?: unknown) {
    super(message, { cause });
    this.name = "CredentialError";
  }
}

/**
 * A failed call, as the registration loop reports it. The message names the URL called and,
 * when no answer came, why: `register: no answer from http://127.0.0.1:8787/registry/register
 * (ECONNREFUSED)`; then `hint`, what it likely means and what to do (register-diagnosis.ts).
 */
export class PinboardCallError extends Error {
  constructor(
    readonly route: string,
    readonly status: number | null,
    readonly body: Record<string, unknown> = {},
    cause?: unknown,
    readonly url?: string,
    readonly hint?: string,
  ) {
    const from = url ? ` from ${url}` : "";
    const said =
      status === null
        ? `${route}: no answer${from} (${describeNetworkError(cause)})`
        : `${route}: ${status}${typeof body.error === "string" && body.error ? ` ${body.error}` : ""}${from}`;
    super(hint ? `${said} — ${hint}` : said, { cause });
    this.name = "PinboardCallError";
  }
}

/**
 * Why a fetch got no answer, in a few words: the system error code when there is one
 * (ECONNREFUSED, ENOTFOUND, ECONNRESET, …), else the innermost message. undici hides the code
 * behind "fetch failed" (err.cause, sometimes an AggregateError of one error per address).
 */
export function describeNetworkError(err: unknown): string {
  const seen = new Set<unknown>();
  let innermost: unknown = err;
  for (let e: unknown = err; e && typeof e === "object" && !seen.has(e); ) {
    seen.add(e);
    const x = e as { code?: unknown; name?: unknown; message?: unknown; cause?: unknown; errors?: unknown };
    if (typeof x.code === "string" && /^E[A-Z]+$/.test(x.code)) return x.code;
    if (x.name === "TimeoutError" && typeof x.message === "string") return x.message;
    innermost = e;
    e = x.cause ?? (Array.isArray(x.errors) ? x.errors[0] : undefined);
  }
  if (innermost && typeof innermost === "object") {
    const x = innermost as { code?: unknown; message?: unknown };
    if (typeof x.code === "string" && x.code) return x.code;
    if (typeof x.message === "string" && x.message) return x.message;
  }
  return String(innermost);
}

/** Jittered exponential backoff: a random delay in [½, 1] × min(cap, base × 2^attempt). */
export function backoffMs(attempt: number, baseMs: number, capMs: number, random: () => number = Math.random): number {
  const ceiling = Math.min(capMs, baseMs * 2 ** Math.min(attempt, 30));
  return Math.round(ceiling * (0.5 + random() / 2));
}
