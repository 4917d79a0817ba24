import type { z } from "zod";
import { VIA_HEADER } from "../audit/via.ts";
import { parseJson } from "../contract/json-text.ts";
import { describeIssues, errorBody } from "./replies.ts";

/**
 * A request the server refused: its {"error"} string (or status text), the HTTP status, and the
 * request it refused (the URL without its query), for messages that say what to fix.
 */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly error: string,
    readonly method: "GET" | "POST",
    readonly url: string,
  ) {
    super(`${error} (HTTP ${status})`);
    this.name = "HttpError";
  }
}

/** No answer at all: connection refused, DNS failure, reset, timeout. */
export class UnreachableError extends Error {
  constructor(
    readonly url: string,
    readonly reason: string,
  ) {
    super(`cannot reach Pinboard at ${url}: ${reason}`);
    this.name = "UnreachableError";
  }
}

/** A 2xx whose body is not what the protocol says (not JSON, or the wrong shape). */
export class UnexpectedAnswerError extends Error {
  constructor(path: string, detail: string) {
    super(`unexpected answer from ${path}: ${detail}`);
    this.name = "UnexpectedAnswerError";
  }
}

/** Generous: /registry/stats alone may take 3 s per batch of 8 workers. */
export const REQUEST_TIMEOUT_MS = 60_000;

export interface ClientOptions {
  /** Pinboard's URL including its base path, e.g. http://127.0.0.1:8787/pb. */
  url: string;
  token: string;
  timeoutMs?: number;
  fetch?: typeof fetch;
}

/** The operator routes over HTTP with a bearer credential, and the node's readiness probe. */
export class OperatorClient {
  readonly base: string;
  private readonly fetchImpl: typeof fetch;

  constructor(private readonly options: ClientOptions) {
    this.base = options.url.replace(/\/+$/, "");
    this.fetchImpl = options.fetch ?? ((input, init) => fetch(input, init));
  }

  get(path: string, query: Record<string, string | undefined> = {}): Promise<unknown> {
    const search = new URLSearchParams();
    for (const [key, value] of Object.entries(query)) if (value !== undefined) search.set(key, value);
    const qs = search.toString();
    return this.request("GET", qs ? `${path}?${qs}` : path);
  }

  post(path: string, body: unknown): Promise<unknown> {
    return this.request("POST", path, body);
  }

  /**
   * GET /readyz (unauthenticated, empty body): true on 200, false on 503. Any other status means
   * the URL does not lead to a Pinboard's probe: an HttpError, like a refused operator route.
   */
  async ready(): Promise<boolean> {
    const url = `${this.base}/readyz`;
    let response: Response;
    try {
      response = await this.fetchImpl(url, {
        redirect: "manual",
        signal: AbortSignal.timeout(this.options.timeoutMs ?? REQUEST_TIMEOUT_MS),
      });
      await response.arrayBuffer();
    } catch (err) {
      throw new UnreachableError(this.base, reasonOf(err));
    }
    if (response.status === 200 || response.status === 503) return response.status === 200;
    throw new HttpError(response.status, response.statusText || "no error message", "GET", url);
  }

  /** The answer checked against a schema: UnexpectedAnswerError when it does not match. */
  static check<T extends z.ZodType>(path: string, schema: T, answer: unknown): z.infer<T> {
    const parsed = schema.safeParse(answer);
    if (!parsed.success) throw new UnexpectedAnswerError(path, describeIssues(parsed.error));
    return parsed.data;
  }

  private async request(method: "GET" | "POST", path: string, body?: unknown): Promise<unknown> {
    const headers: Record<string, string> = {
      authorization: `Bearer ${this.options.token}`,
      accept: "application/json",
      // The audit trail records the actions the CLI sends as via cli.
      [VIA_HEADER]: "cli",
    };
    if (body !== undefined) headers["content-type"] = "application/json";
    const url = `${this.base}${path}`;
    let response: Response;
    try {
      response = await this.fetchImpl(url, {
        method,
        headers,
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
        redirect: "manual",
        signal: AbortSignal.timeout(this.options.timeoutMs ?? REQUEST_TIMEOUT_MS),
      });
    } catch (err) {
      throw new UnreachableError(this.base, reasonOf(err));
    }
    let text: string;
    try {
      text = await response.text();
    } catch (err) {
      throw new UnreachableError(this.base, `answer cut short: ${reasonOf(err)}`);
    }
    const json = parseJson(text);
    if (response.status < 200 || response.status > 299) {
      const error = errorBody.safeParse(json);
      const message = error.success
        ? error.data.error
        : response.statusText || text.trim().slice(0, 200) || "no error message";
      throw new HttpError(response.status, message, method, url.replace(/\?.*$/, ""));
    }
    if (json === undefined) throw new UnexpectedAnswerError(path, `not JSON (HTTP ${response.status})`);
    return json;
  }
}

/** The most specific reason a fetch failed: undici hides the socket error in `cause`. */
function reasonOf(err: unknown): string {
  if (err instanceof Error && (err.name === "TimeoutError" || err.name === "AbortError")) return "no answer in time";
  let reason = err instanceof Error ? err.message : String(err);
  let current: unknown = err;
  for (let depth = 0; depth < 5 && current instanceof Error; depth++) {
    const code = (current as { code?: unknown }).code;
    if (current.message) reason = current.message;
    else if (typeof code === "string") reason = code;
    current = (current as { cause?: unknown }).cause;
  }
  return reason || "unknown network error";
}
