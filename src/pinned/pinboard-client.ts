/**
 * Calls to Pinboard's worker routes. Each call answers { status, body } for any HTTP answer
 * (the caller decides what a status means) and throws only when no answer arrived.
 */

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

  private async token(): Promise<string> {
    const c = this.options.credential;
    return typeof c === "function" ? await c() : c;
  }

  async post(path: string, body: unknown): Promise<PinboardAnswer> {
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), this.timeoutMs);
    try {
      const response = await this.fetch(`${this.base}${path}`, {
        method: "POST",
        headers: { authorization: `Bearer ${await this.token()}`, "content-type": "application/json" },
        body: JSON.stringify(body),
        redirect: "manual",
        signal: controller.signal,
      });
      const text = await response.text();
      let parsed: unknown = null;
      try {
        parsed = text ? JSON.parse(text) : null;
      } catch {
        parsed = null;
      }
      const object = typeof parsed === "object" && parsed !== null && !Array.isArray(parsed) ? parsed : {};
      return { status: response.status, body: object as Record<string, unknown> };
    } finally {
      clearTimeout(timer);
    }
  }
}

/** A failed call, as the registration loop reports it. */
export class PinboardCallError extends Error {
  constructor(
    readonly route: string,
    readonly status: number | null,
    readonly body: Record<string, unknown> = {},
    cause?: unknown,
  ) {
    super(
      status === null
        ? `${route}: no answer (${cause instanceof Error ? cause.message : String(cause)})`
        : `${route}: ${status} ${typeof body.error === "string" ? body.error : ""}`.trim(),
      { cause },
    );
    this.name = "PinboardCallError";
  }
}

/** Jittered exponential backoff: a random delay in [½, 1] × min(cap, base × 2^attempt). */
export function backoffMs(attempt: number, baseMs: number, capMs: number, random: () => number = Math.random): number {
  const ceiling = Math.min(capMs, baseMs * 2 ** Math.min(attempt, 30));
  return Math.round(ceiling * (0.5 + random() / 2));
}
