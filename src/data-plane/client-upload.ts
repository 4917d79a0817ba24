import type { UploadPipe } from "../deps/runtime-info.ts";
import { PinboardError } from "../errors/pinboard-error.ts";

/**
 * A client's body on its way to a worker over fetch, watched so that a failed forward can be told
 * apart: the client's fault (its body broke off, or ended short of its Content-Length) or the
 * worker's (the body was all taken, or there was none). The runtime's fetch reports both the same
 * way ("Network connection lost" on workerd), and only the worker's counts toward its outlier
 * ejection. Completion also starts the worker's deadline: its answer is timed from the last byte.
 *
 * The body is piped through `pipe`; the pipe's end tells which side failed first. A client that
 * breaks off errors the pipe, which then fails the fetch; a worker that breaks off fails the fetch
 * first, which only then cancels the pipe.
 */
export class ClientUpload {
  state: "sending" | "complete" | "broken" = "sending";
  readonly stream: ReadableStream<Uint8Array>;
  private onComplete: (() => void) | undefined;

  constructor(source: ReadableStream<Uint8Array>, declared: number | null, pipe: UploadPipe = countingPipe) {
    const through = pipe(declared);
    this.stream = through.readable;
    source.pipeTo(through.writable).then(
      () => this.finish(),
      () => {
        if (this.state === "sending") this.state = "broken";
      },
    );
  }

  /** Calls `listener` once the last byte has been taken (at once when it already has). */
  whenComplete(listener: () => void): void {
    if (this.state === "complete") listener();
    else this.onComplete = listener;
  }

  private finish(): void {
    this.state = "complete";
    this.onComplete?.();
    this.onComplete = undefined;
  }
}

/**
 * The pipe where the runtime has none of its own (undici, which sends a given Content-Length):
 * it counts the bytes, and a body that ends short of its length fails like a broken one.
 */
function countingPipe(length: number | null): TransformStream<Uint8Array, Uint8Array> {
  let bytes = 0;
  return new TransformStream<Uint8Array, Uint8Array>({
    transform(chunk, controller) {
      bytes += chunk.byteLength;
      controller.enqueue(chunk);
    },
    flush() {
      if (length !== null && bytes < length) throw new Error("the client's body ended short of its Content-Length");
    },
  });
}

/**
 * The client's upload did not arrive within the request timeout (PINBOARD_REQUEST_TIMEOUT_MS):
 * answered as node:http's own request timeout is on the Node entry, and never the worker's fault.
 */
export function requestTimedOut(): PinboardError {
  return new PinboardError(408, { error: "request timeout" }, { connection: "close" });
}
