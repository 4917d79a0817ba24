import type { Operation } from "./history.ts";

/**
 * The client side of the campaign: `clients` loops, each sending one request at a time through a
 * random Pinboard node until the deadline, every request bounded by a timeout. Per key, an
 * Elle-style list-append (a unique value appended, or the list read) and, on other keys, a
 * read-modify-write counter. Keys are skewed (a few hot ones take most requests), so several hot
 * instances are always under fire when a fault strikes.
 *
 * Beside the clients, one prober per key reads it every PROBE_EVERY_MS with a short timeout: a
 * client whose request waits on a stopped owner is stuck until the forward times out, and when
 * every client is stuck so, nobody would ask for the key once it moved. The probes are what
 * measures when each key is served again (and their reads are checked like any other).
 */

export interface WorkloadOptions {
  nodes: string[];
  clients: number;
  listKeys: number;
  /** List keys named `u…`: their appends also go to the user database, through the fence. */
  userDbKeys: number;
  counterKeys: number;
  timeoutMs: number;
  random: () => number;
}

const PROBE_EVERY_MS = 250;
const PROBE_TIMEOUT_MS = 1000;

/** Refusals Pinboard answers before it forwards anything: the operation certainly did not happen. */
export const REFUSED_BEFORE_FORWARD = new Set([
  "503 registry cold start, retry",
  "503 no live backends for namespace",
  "503 redis unavailable, retry",
  "503 not the serving fleet",
  // After the placement Redis lost its data, until the workers have registered again.
  "404 unknown namespace",
]);

export class Workload {
  readonly operations: Operation[] = [];
  private nextId = 0;
  private stopping = false;

  constructor(private readonly options: WorkloadOptions) {}

  /** Every key the workload touches, as "/ns/id". */
  listKeys(): string[] {
    const { listKeys, userDbKeys } = this.options;
    // The `u…` keys first: hot (skewed() favours the first keys), so the user database's fence is under fire.
    return [
      ...Array.from({ length: userDbKeys }, (_, i) => `/lists/u${i}`),
      ...Array.from({ length: listKeys }, (_, i) => `/lists/k${i}`),
    ];
  }

  counterKeys(): string[] {
    return Array.from({ length: this.options.counterKeys }, (_, i) => `/counters/c${i}`);
  }

  /** Runs the client loops until `deadline` (ms), then waits for the requests in flight. */
  async run(deadline: number): Promise<void> {
    const loops = Array.from({ length: this.options.clients }, () => this.loop(deadline));
    const probes = [...this.listKeys(), ...this.counterKeys()].map((key) => this.probe(key, deadline));
    await Promise.all([...loops, ...probes]);
  }

  stop(): void {
    this.stopping = true;
  }

  /** One request, recorded: what the final reads of the checker use too. */
  async request(
    key: string,
    kind: Operation["kind"],
    node = this.pickNode(),
    timeoutMs = this.options.timeoutMs,
  ): Promise<Operation> {
    const value = kind === "append" ? `v${this.nextId}` : undefined;
    const op: Operation = { id: this.nextId++, key, kind, node, start: Date.now(), end: 0, outcome: "info" };
    if (value) op.value = value;
    const base = this.options.nodes[node]!;
    const url =
      kind === "read" ? `${base}${key}` : kind === "incr" ? `${base}${key}/incr` : `${base}${key}/append?v=${value}`;
    try {
      const res = await fetch(url, {
        headers: this.clientHeaders(),
        method: kind === "read" ? "GET" : "POST",
        signal: AbortSignal.timeout(timeoutMs),
      });
      const text = await res.text();
      op.end = Date.now();
      record(op, res.status, text);
    } catch (err) {
      op.end = Date.now(); // no answer, or cut: it may or may not have happened
      op.error = err instanceof Error ? (err.cause instanceof Error ? err.cause.message : err.message) : String(err);
    }
    this.operations.push(op);
    return op;
  }

  private async probe(key: string, deadline: number): Promise<void> {
    // A user-database key's prober appends every other time: while the clients wait on a stopped
    // owner, its appends reach the new one, which raises the user database's fence before the
    // zombie's queued appends run (else the fence would never be the layer that decides).
    const appends = key.startsWith("/lists/u");
    let turn = 0;
    while (!this.stopping && Date.now() < deadline) {
      const started = Date.now();
      const kind = appends && turn++ % 2 === 1 ? "append" : "read";
      await this.request(key, kind, this.pickNode(), PROBE_TIMEOUT_MS);
      await new Promise((r) => setTimeout(r, Math.max(0, started + PROBE_EVERY_MS - Date.now())));
    }
  }

  private async loop(deadline: number): Promise<void> {
    while (!this.stopping && Date.now() < deadline) {
      const roll = this.options.random();
      const op =
        roll < 0.15
          ? await this.request(this.skewed(this.counterKeys()), "incr")
          : await this.request(this.skewed(this.listKeys()), roll < 0.75 ? "append" : "read");
      // A client that was refused waits a little, as a real one would, instead of spinning.
      if (op.outcome !== "ok") await new Promise((r) => setTimeout(r, 100));
    }
  }

  /**
   * Reads every key until it answers (a fresh placement Redis opens each bucket with a cold start),
   * so the campaign's clock starts on a serving fleet. Not recorded.
   */
  async warmUp(timeoutMs: number, otherKeys: string[] = []): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    // All at once: each bucket's cold start opens at its first request, so one at a time would add them up.
    const keys = [...this.listKeys(), ...this.counterKeys(), ...otherKeys];
    await Promise.all(keys.map((key) => this.untilServed(key, deadline)));
  }

  private async untilServed(key: string, deadline: number): Promise<void> {
    for (;;) {
      const signal = AbortSignal.timeout(this.options.timeoutMs);
      const res = await fetch(`${this.options.nodes[0]}${key}`, { headers: this.clientHeaders(), signal }).catch(
        () => undefined,
      );
      const text = (await res?.text().catch(() => "")) ?? "no answer";
      if (res?.status === 200) return;
      if (Date.now() > deadline) throw new Error(`warm-up: ${key} not served: ${res?.status} ${text.slice(0, 200)}`);
      await new Promise((r) => setTimeout(r, 200));
    }
  }

  /** Mostly the first few keys: index ~ n·r³. */
  private skewed(keys: string[]): string {
    return keys[Math.floor(keys.length * this.options.random() ** 3)]!;
  }

  /**
   * A client address of its own per request (Pinboard trusts the harness as a proxy): it is the
   * affinity key, so new placements spread over the workers rather than all following 127.0.0.1.
   */
  private clientHeaders(): Record<string, string> {
    const octet = () => 1 + Math.floor(this.options.random() * 254);
    return { "x-forwarded-for": `10.${octet()}.${octet()}.${octet()}` };
  }

  private pickNode(): number {
    return Math.floor(this.options.random() * this.options.nodes.length);
  }
}

function record(op: Operation, status: number, text: string): void {
  let body: { list?: string[]; counter?: number; epoch?: string; worker?: string; error?: string } = {};
  try {
    body = JSON.parse(text);
  } catch {
    // not JSON: a refusal of the worker's or a proxy's
  }
  if (status === 200) {
    op.outcome = "ok";
    if (body.epoch !== undefined) op.epoch = body.epoch;
    if (body.worker !== undefined) op.worker = body.worker;
    if (body.list !== undefined) op.list = body.list;
    if (body.counter !== undefined) op.counter = body.counter;
    return;
  }
  op.error = `${status} ${body.error ?? text.slice(0, 80)}`;
  // Only Pinboard's own refusals before a forward are certain; anything else may have been written.
  if (REFUSED_BEFORE_FORWARD.has(`${status} ${body.error}`)) op.outcome = "fail";
}
