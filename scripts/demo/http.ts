/**
 * HTTP helpers of the demo: requests through Pinboard that ride out the moments a fresh fleet or
 * a dead worker answers 5xx, and the operator reads that say which worker owns an id.
 */

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export interface RetryOptions {
  /** Give up (returning the last answer, or throwing the last error) after this long. */
  timeoutMs?: number;
  /**
   * Which answers to retry. Default: 503 only, which Pinboard and the worker library both use for
   * "not executed, try again" (registry cold start, worker refusals), so it is safe for POSTs too.
   */
  retry?: (status: number) => boolean;
  /** Told about every retry (status or network error, and the wait). */
  onRetry?: (what: string, waitMs: number) => void;
}

/** 503 and, for idempotent reads, 502/504 (a dead owner until its lease runs out). */
export const retryReads = (status: number) => status === 502 || status === 503 || status === 504;

/**
 * fetch with retries: a 503 waits for its Retry-After (seconds), other retried answers and
 * network errors back off from 200 ms, doubling up to 2 s.
 */
export async function fetchWithRetry(
  url: string,
  init: RequestInit = {},
  options: RetryOptions = {},
): Promise<Response> {
  const deadline = Date.now() + (options.timeoutMs ?? 30_000);
  const retry = options.retry ?? ((status: number) => status === 503);
  let backoff = 200;
  for (;;) {
    let res: Response | undefined;
    let failure: unknown;
    try {
      res = await fetch(url, { ...init, signal: AbortSignal.timeout(10_000) });
    } catch (err) {
      failure = err;
    }
    if (res && !retry(res.status)) return res;
    let waitMs = backoff;
    let what: string;
    if (res) {
      const body = await res.text();
      what = `${res.status}${body ? ` ${body.trim().slice(0, 120)}` : ""}`;
      const retryAfter = Number(res.headers.get("retry-after"));
      if (res.status === 503 && Number.isFinite(retryAfter) && retryAfter > 0) waitMs = Math.min(retryAfter, 10) * 1000;
      if (Date.now() + waitMs > deadline) return new Response(body, { status: res.status, headers: res.headers });
    } else {
      what = `network error: ${failure instanceof Error ? (failure.cause ?? failure.message) : String(failure)}`;
      if (Date.now() + waitMs > deadline) throw failure;
    }
    options.onRetry?.(what, waitMs);
    await sleep(waitMs);
    backoff = Math.min(backoff * 2, 2000);
  }
}

export async function expectJson<T>(res: Response, what: string): Promise<T> {
  const text = await res.text();
  if (!res.ok) throw new Error(`${what}: HTTP ${res.status} ${text.slice(0, 300)}`);
  return JSON.parse(text) as T;
}

export interface PublicWorker {
  sessionId: string;
  clientId: string;
  advertiseUrl: string;
  namespaces: string[];
  draining: boolean;
}

interface Overview {
  workers: PublicWorker[];
  namespaces: { namespace: string; entries: { id: string; sessionId: string }[] }[];
}

/** The operator plane, read with an operator credential. */
export class Operator {
  constructor(
    private readonly pinboardUrl: string,
    private readonly token: string,
  ) {}

  private async get<T>(path: string): Promise<T> {
    const res = await fetch(`${this.pinboardUrl}${path}`, {
      headers: { authorization: `Bearer ${this.token}` },
      signal: AbortSignal.timeout(10_000),
    });
    return expectJson<T>(res, `GET ${path}`);
  }

  /** The live workers. */
  async workers(): Promise<PublicWorker[]> {
    return (await this.get<{ workers: PublicWorker[] }>("/registry/workers")).workers;
  }

  /** The live owner of (ns, id), or null when no live worker holds it. */
  async owner(ns: string, id: string): Promise<PublicWorker | null> {
    const view = await this.get<Overview>(
      `/registry/overview?ns=${encodeURIComponent(ns)}&prefix=${encodeURIComponent(id)}`,
    );
    for (const group of view.namespaces) {
      const entry = group.entries.find((e) => e.id === id);
      if (entry) return view.workers.find((w) => w.sessionId === entry.sessionId) ?? null;
    }
    return null;
  }
}
