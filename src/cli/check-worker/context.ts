import { isLeaseRefusal } from "../../contract/header-names.ts";
import type { CheckResult } from "./report.ts";
import type { StubRegistry } from "./stub-registry.ts";
import { type Answer, describeAnswer, type WorkerClient } from "./worker-client.ts";

/** What every group of checks works with, and where it records its results. */
export class CheckContext {
  readonly results: CheckResult[] = [];
  private ids = 0;
  private epochs = 0n;
  private readonly run = Math.random().toString(36).slice(2, 8);
  /** A now-based epoch base, as Pinboard mints them, with room for every epoch the run uses. */
  private readonly epochBase = BigInt(Date.now()) * 1000n;

  constructor(
    readonly registry: StubRegistry,
    readonly client: WorkerClient,
    /** The namespace the forwards go to: one the worker registered. */
    readonly ns: string,
  ) {}

  /** A fresh instance id: each check that activates an instance uses its own. */
  nextId(): string {
    return `check-${this.run}-${++this.ids}`;
  }

  /** A fresh placement epoch, higher than every one before it; the next integer is never used. */
  nextEpoch(): string {
    this.epochs += 10n;
    return `${this.epochBase + this.epochs}`;
  }

  /** A forward's target: `{ns}/{id}{rest}`. */
  target(id: string, rest = "/check-worker"): string {
    return `${this.ns}/${id}${rest}`;
  }

  pass(group: string, title: string, note?: string): void {
    this.results.push({ status: "pass", group, title, ...(note !== undefined ? { note } : {}) });
  }

  fail(group: string, title: string, got: string, expected: string): void {
    this.results.push({ status: "fail", group, title, got, expected });
  }

  skip(group: string, title: string, note: string): void {
    this.results.push({ status: "skip", group, title, note });
  }

  /** PASS when `ok`, else FAIL with the answer and `expected`. */
  expect(group: string, title: string, answer: Answer, ok: boolean, expected: string): boolean {
    if (ok) this.pass(group, title);
    else this.fail(group, title, describeAnswer(answer), expected);
    return ok;
  }
}

/** The guard answers of the contract, by their `detail`. */
export const INVALID_ATTESTATION = "invalid attestation";
export const INVALID_PROXY_SECRET = "invalid proxy secret";
export const UNKNOWN_CHALLENGE = "unknown challenge";
export const MALFORMED_EPOCH = "malformed placement epoch";
export const STALE_EPOCH = "stale placement epoch";
export const UNKNOWN_NAMESPACE = "unknown namespace";

const GUARD_DETAILS = new Set([
  INVALID_ATTESTATION,
  INVALID_PROXY_SECRET,
  MALFORMED_EPOCH,
  STALE_EPOCH,
  UNKNOWN_NAMESPACE,
]);

/** `status` with the JSON body {"detail": detail} exactly. */
export function isDetail(answer: Answer, status: number, detail: string): boolean {
  if (answer.kind !== "answered" || answer.status !== status) return false;
  const body = answer.json;
  return (
    typeof body === "object" &&
    body !== null &&
    !Array.isArray(body) &&
    Object.keys(body).length === 1 &&
    (body as { detail?: unknown }).detail === detail
  );
}

export const detailText = (status: number, detail: string): string => `${status} ${JSON.stringify({ detail })}`;

/** The in-band refusal: 503 + Pinned-Refusal: lease-unhealthy. */
export function isRefusal(answer: Answer): boolean {
  return answer.kind === "answered" && isLeaseRefusal(answer.status, answer.refusal);
}

export const REFUSAL_TEXT = "503 + Pinned-Refusal: lease-unhealthy";

/**
 * The forward reached the instance: an answer below 500 that is none of the contract's guard
 * answers and no in-band refusal (what the instance itself answers is its own business).
 */
export function isServed(answer: Answer): boolean {
  if (answer.kind !== "answered" || answer.status >= 500 || answer.refusal !== null) return false;
  const detail = (answer.json as { detail?: unknown } | null | undefined)?.detail;
  return !(typeof detail === "string" && GUARD_DETAILS.has(detail));
}

export const SERVED_TEXT = "the instance's own answer (below 500, no guard answer, no Pinned-Refusal)";

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
