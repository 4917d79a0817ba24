import type { UploadPipe } from "../../deps/runtime-info.ts";

/** workerd's native pass-through streams (globals the Node types this project compiles with lack). */
interface WorkerdStreams {
  FixedLengthStream: new (length: number) => TransformStream<Uint8Array, Uint8Array>;
  IdentityTransformStream: new () => TransformStream<Uint8Array, Uint8Array>;
}

/**
 * The pipe a forwarded body goes through on workerd. workerd's fetch sends a stream it made itself
 * with its framing (a FixedLengthStream with its Content-Length, an identity stream chunked) and
 * pipes native streams without running JavaScript per chunk; a stream built in JavaScript goes
 * chunked whatever its Content-Length said, and a broken one was seen ending as if complete.
 */
export const workerdUploadPipe: UploadPipe = (length) => {
  const streams = globalThis as unknown as WorkerdStreams;
  return length === null ? new streams.IdentityTransformStream() : new streams.FixedLengthStream(length);
};
