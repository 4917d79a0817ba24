/**
 * The soak's traffic and how each answer is judged.
 *
 * Mix (weights): hot ids GET 50, hot ids POST with a 1 KiB body 10, new ids GET 15, WebSocket
 * sessions 10 (three echoed messages, then a normal close), operator reads 3 (overview, workers,
 * stats, health, /metrics).
 *
 * What is allowed, and why (everything else is a failure and fails the run):
 *   - 200 (101 and a clean close for a WebSocket session): the point.
 *   - 503 {"error"} with Retry-After naming one of the spec's refusals: no live backends,
 *     cold start, worker refused activation (a draining or stopping worker refused and no other
 *     took the request), inflight cap, … The spec calls for them; counted apart.
 *   - 503 {"detail"} with Retry-After: a worker's own in-band refusal relayed for a request with a
 *     body (the spec: "a request with a body gets the 503 at once"), which a worker being drained
 *     by the operator or stopped by churn gives to a new activation.
 *   - 409 {"detail":"stale placement epoch"}: the worker's epoch guard catching a forward that
 *     raced a re-placement (spec: "the worker's epoch guard catches a forward that is still
 *     stale"); timed drains and churn re-place ids.
 *   - 502 bad gateway for a request that started during a churn: its resolution named the worker
 *     being taken away, and the forward reached the closed listener (spec: 502 for an unreachable
 *     worker). Outside a churn a 502 is a failure: no worker is unreachable then.
 *   - A WebSocket session closed by the server, or refused at the handshake the same ways, while
 *     its worker was churned or drained.
 * Not allowed: any 500, 504, a 502 outside churn, "redis unavailable" (Redis never goes away
 * here), other 4xx (a 403 "invalid attestation" included: a stopping worker accepts its retired
 * session's forwards for a grace, and a registering one waits for the answer that names its new
 * session; WebSocket: close 1008), network errors between the client and Pinboard, timeouts (15 s).
 */
import WebSocket from "ws";
import type { SoakCluster } from "./cluster.ts";
import type { Outcome, SoakStats } from "./stats.ts";

const SPEC_REFUSALS = new Set([
  "no live backends for namespace",
  "registry cold start, retry",
  "not the serving fleet",
  "worker inflight cap exceeded, retry",
  "worker refused activation, retry",
]);

const REQUEST_TIMEOUT_MS = 15_000;
const BODY = "x".repeat(1024);

export interface TrafficOptions {
  hotIds: number;
  newIdPool: number;
  webSockets: boolean;
}

type Action = "hot-get" | "hot-post" | "new-get" | "ws" | "operator";

export class Traffic {
  private newIds = 0;
  private readonly table: Array<[Action, number]>;
  private readonly totalWeight: number;

  constructor(
    private readonly cluster: SoakCluster,
    private readonly stats: SoakStats,
    private readonly options: TrafficOptions,
  ) {
    this.table = [
      ["hot-get", 50],
      ["hot-post", 10],
      ["new-get", 15],
      ["ws", options.webSockets ? 10 : 0],
      ["operator", 3],
    ];
    this.totalWeight = this.table.reduce((s, [, w]) => s + w, 0);
  }

  private pick(): Action {
    let r = Math.random() * this.totalWeight;
    for (const [action, weight] of this.table) {
      if ((r -= weight) < 0) return action;
    }
    return "hot-get";
  }

  /** One lane: actions back to back until `until` (ms). */
  async lane(until: number): Promise<void> {
    while (Date.now() < until) {
      try {
        await this.one(this.pick());
      } catch (err) {
        this.stats.failure("lane crashed", err instanceof Error ? (err.stack ?? err.message) : String(err));
      }
    }
  }

  private hot(): string {
    return `hot-${Math.floor(Math.random() * this.options.hotIds)}`;
  }

  async one(action: Action): Promise<void> {
    switch (action) {
      case "hot-get":
        return this.http("GET", `/soak/${this.hot()}`);
      case "hot-post":
        return this.http("POST", `/soak/${this.hot()}/echo`, BODY);
      case "new-get":
        return this.http("GET", `/soak/n-${this.newIds++ % this.options.newIdPool}`);
      case "ws":
        return this.webSocket(`/soakws/room-${Math.floor(Math.random() * 64)}`);
      case "operator": {
        const paths = [
          "/registry/overview?ns=/soak&prefix=hot-",
          "/registry/workers",
          "/registry/stats",
          "/registry/health",
          "/metrics",
        ];
        return this.http(
          "GET",
          paths[Math.floor(Math.random() * paths.length)]!,
          undefined,
          this.cluster.operatorToken,
        );
      }
    }
  }

  private async http(method: string, path: string, body?: string, token?: string): Promise<void> {
    const started = Date.now();
    const t0 = performance.now();
    let outcome: Outcome;
    let example = `${method} ${path}`;
    try {
      const res = await fetch(`${this.cluster.url}${path}`, {
        method,
        headers: {
          ...(token ? { authorization: `Bearer ${token}` } : {}),
          ...(body ? { "content-type": "text/plain" } : {}),
        },
        ...(body ? { body } : {}),
        redirect: "manual",
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
      });
      const text = await res.text();
      example += ` → ${res.status} ${text.slice(0, 160)}`;
      outcome = token ? judgeOperator(res.status) : this.judge(res.status, res.headers, text, started);
    } catch (err) {
      const name = err instanceof Error ? err.name : "";
      outcome =
        name === "TimeoutError"
          ? { label: "timeout", verdict: "failure", kind: "timeout" }
          : { label: "network", verdict: "failure", kind: `network: ${describe(err)}` };
      example += ` → ${describe(err)}`;
    }
    this.stats.record(outcome, performance.now() - t0, example);
  }

  /** The verdict on a data-plane answer (see the header of this file). */
  judge(status: number, headers: Headers, text: string, startedAt: number): Outcome {
    if (status === 200) return { label: "200", verdict: "ok" };
    let body: { error?: unknown; detail?: unknown } = {};
    try {
      body = JSON.parse(text) as typeof body;
    } catch {
      // text/plain answers (502/504) and empty bodies
    }
    const retryAfter = Number(headers.get("retry-after") ?? 0);
    if (status === 503 && typeof body.error === "string" && SPEC_REFUSALS.has(body.error) && retryAfter >= 1) {
      return { label: "503 refusal", verdict: "allowed", kind: `503 ${body.error}` };
    }
    if (status === 503 && typeof body.detail === "string" && retryAfter >= 1) {
      return { label: "503 refusal", verdict: "allowed", kind: `503 worker: ${body.detail}` };
    }
    if (status === 409 && body.detail === "stale placement epoch")
      return { label: "409 stale", verdict: "allowed", kind: "409 stale placement epoch" };
    if (status === 502 && text === "bad gateway" && this.cluster.inChurn(startedAt))
      return { label: "502 churn", verdict: "allowed", kind: "502 bad gateway during churn" };
    const what =
      typeof body.error === "string" ? body.error : typeof body.detail === "string" ? body.detail : text.slice(0, 60);
    return {
      label: `FAIL ${status}`,
      verdict: "failure",
      kind: `${status} ${what}${status === 502 ? " (outside churn)" : ""}`,
    };
  }

  /** A WebSocket session: open, three echoed messages, a normal close. */
  private webSocket(path: string): Promise<void> {
    const started = Date.now();
    const t0 = performance.now();
    const url = `${this.cluster.url.replace(/^http/, "ws")}${path}`;
    return new Promise<void>((resolve) => {
      let settled = false;
      const ws = new WebSocket(url, { handshakeTimeout: REQUEST_TIMEOUT_MS });
      const finish = (outcome: Outcome, example: string) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        this.stats.record(outcome, performance.now() - t0, `WS ${path} → ${example}`);
        resolve();
      };
      const lost = (why: string, code?: number) => {
        const at = Date.now();
        // 1008 is the worker refusing the attestation: never a churn's or a drain's doing.
        const refused = code === 1008;
        if (!refused && (this.cluster.inChurn(started) || this.cluster.inChurn(at)))
          finish({ label: "ws lost (churn)", verdict: "allowed", kind: `ws ${why} during churn` }, why);
        else if (!refused && (this.cluster.inDrain(started) || this.cluster.inDrain(at)))
          finish({ label: "ws lost (drain)", verdict: "allowed", kind: `ws ${why} during drain` }, why);
        else finish({ label: "FAIL ws", verdict: "failure", kind: `ws ${why}` }, why);
      };
      const timer = setTimeout(() => {
        ws.terminate();
        finish({ label: "timeout", verdict: "failure", kind: "ws timeout" }, "timeout");
      }, REQUEST_TIMEOUT_MS);

      ws.on("unexpected-response", (_req, res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (d: string) => (text += d));
        res.on("end", () => {
          ws.terminate();
          const status = res.statusCode ?? 0;
          const headers = new Headers();
          for (const [k, v] of Object.entries(res.headers)) if (typeof v === "string") headers.set(k, v);
          const outcome = this.judge(status, headers, text, started);
          finish({ ...outcome, label: `ws ${outcome.label}` }, `${status} ${text.slice(0, 120)}`);
        });
      });
      const sent = ["one", "two", "three"];
      const echoed: string[] = [];
      ws.on("open", () => {
        for (const m of sent) ws.send(m);
      });
      ws.on("message", (data) => {
        echoed.push(String(data));
        if (echoed.length === sent.length) {
          if (echoed.join() !== sent.join())
            return finish({ label: "FAIL ws", verdict: "failure", kind: "ws echo mismatch" }, echoed.join());
          ws.close(1000, "done");
        }
      });
      ws.on("close", (code) => {
        if (echoed.length === sent.length && code === 1000) finish({ label: "ws", verdict: "ok" }, "closed 1000");
        else lost(`closed ${code} after ${echoed.length}/3 echoes`, code);
      });
      ws.on("error", (err) => {
        if (!settled && ws.readyState !== WebSocket.CONNECTING) return; // close follows
        lost(`error ${describe(err)}`);
      });
    });
  }
}

function judgeOperator(status: number): Outcome {
  return status === 200
    ? { label: "op 200", verdict: "ok" }
    : { label: `FAIL op ${status}`, verdict: "failure", kind: `operator read ${status}` };
}

function describe(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const cause = (err as { cause?: { code?: string; message?: string } }).cause;
  return cause?.code ?? cause?.message ?? err.message;
}

/**
 * Whether the Node entry proxies WebSocket upgrades: one handshake to a namespace the workers
 * serve. Anything but an open socket (a 404, an error) means no.
 */
export function probeWebSockets(baseUrl: string): Promise<{ ok: boolean; why: string }> {
  return new Promise((resolve) => {
    const ws = new WebSocket(`${baseUrl.replace(/^http/, "ws")}/soakws/probe`, { handshakeTimeout: 5000 });
    const done = (ok: boolean, why: string) => {
      ws.terminate();
      resolve({ ok, why });
    };
    ws.on("open", () => done(true, "open"));
    ws.on("unexpected-response", (_req, res) => done(false, `upgrade answered ${res.statusCode}`));
    ws.on("error", (err) => done(false, describe(err)));
  });
}
