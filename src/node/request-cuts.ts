import type { WorkerCall } from "../resolve/worker-call.ts";
import type { DeadlineSweep, Expiring } from "./deadline-sweep.ts";

/**
 * The two ways the Node transport's requests end early: fetch's AbortSignal (signalCut), and a
 * forward's deadline and client (CallCut), which need no AbortSignal (worker-call.ts says why).
 */

/** What may end a request early. */
export interface Cut {
  /** Set when it is over before it started. */
  readonly reason: Error | undefined;
  /** From now on, `end` ends the request with the reason. */
  arm(end: (reason: Error) => void): void;
  disarm(): void;
  /** Whether a streamed body stays armed until it ends (fetch's signal) or is free once answered. */
  readonly coversBody: boolean;
}

/** fetch's semantics: the signal ends the request, its streamed body included. */
export function signalCut(signal: AbortSignal | undefined): Cut {
  let listener: (() => void) | undefined;
  return {
    reason: signal?.aborted ? abortError(signal) : undefined,
    arm(end) {
      if (!signal) return;
      listener = () => end(abortError(signal));
      signal.addEventListener("abort", listener, { once: true });
    },
    disarm() {
      if (listener) signal?.removeEventListener("abort", listener);
    },
    coversBody: true,
  };
}

/** A forward's call: its deadline and its client end it until the answer is in. */
export class CallCut implements Cut, Expiring {
  why: "timeout" | "aborted" | undefined;
  readonly coversBody = false;
  expiresAt = Infinity;
  private end: ((reason: Error) => void) | undefined;
  private stopListening: (() => void) | undefined;

  constructor(
    private readonly call: WorkerCall,
    private readonly deadlines: DeadlineSweep<CallCut>,
  ) {
    if (call.client.gone) this.why = "aborted";
  }

  get reason(): Error | undefined {
    return this.why === undefined ? undefined : new Error(`forward ${this.why === "timeout" ? "timed out" : "aborted by the client"}`);
  }

  arm(end: (reason: Error) => void): void {
    this.end = end;
    this.expiresAt = this.deadlines.now() + this.call.timeoutMs;
    this.deadlines.add(this);
    this.stopListening = this.call.client.onGone(() => this.stop("aborted"));
  }

  expire(): void {
    this.stop("timeout");
  }

  disarm(): void {
    this.end = undefined;
    this.deadlines.delete(this);
    this.stopListening?.();
  }

  private stop(why: "timeout" | "aborted"): void {
    const end = this.end;
    if (!end) return;
    this.why ??= why;
    end(this.reason!);
  }
}

function abortError(signal: AbortSignal): Error {
  return signal.reason instanceof Error ? signal.reason : new DOMException("This operation was aborted", "AbortError");
}
