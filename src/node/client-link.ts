import type { ServerResponse } from "node:http";
import type { Context } from "hono";
import type { AppEnv } from "../deps.ts";
import { requestLink, type ClientLink } from "../resolve/worker-call.ts";

/**
 * The client link of a request the Node adapter serves, read from its ServerResponse rather than
 * `request.signal`, which would make the adapter build an AbortController per request (why that
 * matters: src/resolve/worker-call.ts). Before Pinboard has answered, the response can only
 * close because the client went away.
 */
export function nodeClientLink(c: Context<AppEnv>): ClientLink {
  const outgoing = (c.env as { outgoing?: ServerResponse } | undefined)?.outgoing;
  if (!outgoing) return requestLink(c.req.raw);
  return {
    get gone() {
      return outgoing.destroyed;
    },
    onGone(listener) {
      outgoing.once("close", listener);
      return () => void outgoing.off("close", listener);
    },
  };
}
