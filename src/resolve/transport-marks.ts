/**
 * What a runtime's fetch may tell the proxy about a Response it built, beyond the Fetch API.
 * The Node entry's transport (src/node/http-transport.ts) answers small bodies as complete bytes
 * and never decodes content-encoding; the proxy then skips web streams for the body and keeps the
 * encoding headers. Any other fetch (Workers, undici) carries no marks and is treated as before.
 */

const COMPLETE_BODY = Symbol.for("pinboard.completeBody");
const UNDECODED = Symbol.for("pinboard.undecoded");
const RAW_HEADERS = Symbol.for("pinboard.rawHeaders");

type Marked = Response & { [COMPLETE_BODY]?: Uint8Array<ArrayBuffer> | null; [UNDECODED]?: true; [RAW_HEADERS]?: string[] };

/**
 * Marks `response` as carrying its whole body (null: none), undecoded, with the header lines as
 * received (`name, value, name, value, …`), so the proxy can answer without building Headers.
 */
export function markComplete(response: Response, bytes: Uint8Array<ArrayBuffer> | null, rawHeaders: string[]): Response {
  (response as Marked)[COMPLETE_BODY] = bytes;
  (response as Marked)[UNDECODED] = true;
  (response as Marked)[RAW_HEADERS] = rawHeaders;
  return response;
}

/** The header lines of a response marked complete, as received. */
export function rawHeadersOf(response: Response): string[] | undefined {
  return (response as Marked)[RAW_HEADERS];
}

/** Marks a streamed `response` whose body is passed through undecoded. */
export function markUndecoded(response: Response): Response {
  (response as Marked)[UNDECODED] = true;
  return response;
}

/** The complete body bytes (null: no body), or undefined when the body must be streamed. */
export function completeBody(response: Response): Uint8Array<ArrayBuffer> | null | undefined {
  return (response as Marked)[COMPLETE_BODY];
}

/** True when the body still carries its content-encoding (so its headers must stay). */
export function isUndecoded(response: Response): boolean {
  return (response as Marked)[UNDECODED] === true;
}
