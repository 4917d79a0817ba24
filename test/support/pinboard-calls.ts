import { signAttestation } from "../../src/contract/attestation.ts";
import type { PinnedWorker } from "../../src/pinned/index.ts";

/** A fetch that can be cut off: while `down`, every call fails as an unreachable network would. */
export function partitionableFetch(): { fetch: typeof fetch; down: boolean } {
  const state: { fetch: typeof fetch; down: boolean } = {
    down: false,
    fetch: ((input: RequestInfo | URL, init?: RequestInit) =>
      state.down ? Promise.reject(new TypeError("fetch failed: partitioned")) : fetch(input, init)) as typeof fetch,
  };
  return state;
}

/** Retries a request through Pinboard while it answers 5xx (cold start, re-placement, lease expiry). */
export async function untilServed(url: string, init: RequestInit = {}, timeoutMs = 15_000): Promise<Response> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const res = await fetch(url, init);
    if (res.status < 500 || Date.now() > deadline) return res;
    await res.arrayBuffer();
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** A forward as Pinboard would send it to `worker`, attested for its current session. */
export async function directForward(
  worker: PinnedWorker,
  path: string,
  epoch: string,
  init: RequestInit = {},
): Promise<Response> {
  const token = await signAttestation(
    worker.secret,
    { aud: worker.sessionId!, htm: init.method ?? "GET", htu: path, epoch },
    Date.now() / 1000,
  );
  const headers = new Headers(init.headers);
  headers.set("Pinboard-Attestation", token);
  headers.set("Pinboard-Epoch", epoch);
  return fetch(`${worker.advertiseUrl}${path}`, { ...init, headers });
}
