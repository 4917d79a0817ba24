import type { SyncJwsHs256 } from "../contract/attestation.ts";

/**
 * A pass-through stream for a client's body that the runtime's fetch sends with the client's
 * framing: `length` bytes exactly, erroring when fewer come (workerd's FixedLengthStream), or
 * chunked (null). A runtime's own native stream keeps its fetch's framing and its fast pipe.
 */
export type UploadPipe = (length: number | null) => TransformStream<Uint8Array, Uint8Array>;

/**
 * What the runtime can do and tell about itself. The core asks these capabilities, never which
 * runtime it is on; `label` only names the node in ids and logs.
 */
export interface RuntimeInfo {
  label: string;
  /**
   * "request-bound": work outlives its request only when handed to the request's waitUntil, and
   * a client that goes away cancels the request's promises (Workers). "runs-on": a promise runs
   * to its end by itself, timers run between requests (Node).
   */
  backgroundWork: "request-bound" | "runs-on";
  /** The runtime's fetch hands over a decoded body for a Content-Encoding answer (undici does). */
  fetchDecodesBodies: boolean;
  /**
   * A native pass-through stream for a forwarded body that the runtime's fetch sends with the
   * client's framing (workerd's FixedLengthStream); without one the core counts the bytes itself.
   */
  uploadPipe?: UploadPipe;
  startedAt: number;
  rssBytes?: () => number;
  /**
   * The most subrequests (fetches, Redis REST calls) one invocation may make, where the platform
   * caps them: 50 on the Workers Free plan (Paid allows 10,000, which the runtime cannot tell).
   */
  subrequestsPerInvocation?: number;
  /** A synchronous HS256 signer for attestations, where the runtime has one (Node). */
  signJws?: SyncJwsHs256;
  /**
   * What the runtime's edge knows of a request's client, as forward headers that replace any the
   * client sent (Workers: CF-IPCountry from request.cf, CF-Visitor from the scheme). Absent
   * elsewhere: a client's own CF-* claims are dropped (header-hygiene.ts).
   */
  edgeHeaders?: (request: Request) => Record<string, string>;
}
