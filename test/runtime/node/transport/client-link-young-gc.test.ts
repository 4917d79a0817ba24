import { PassThrough } from "node:stream";
import { getHeapSpaceStatistics } from "node:v8";
import { describe, expect, it } from "vitest";
import { type ClientLink, signalLink } from "../../../../src/data-plane/inbound.ts";
import { socketLink } from "../../../../src/runtime/node/transport/client-link.ts";
import { collectGarbage } from "../../../support/gc-on-demand.ts";

const oldSpaceUsed = () => getHeapSpaceStatistics().find((s) => s.space_name === "old_space")!.space_used_size;

const LINKS = 2000;
const PAYLOAD_BYTES = 4096;

/**
 * How much of what `LINKS` dropped links reached (4 KB each) survives two young-generation
 * collections: promoted to the old space instead of freed. A link is made per request, and what
 * it reaches is the request (its socket, response, and what their listeners hold), so a link
 * that survives scavenges drags each request's objects into the old generation (the paced-latency
 * analysis in docs/performance.md).
 */
function promotedBytes(make: (payload: object) => ClientLink): number {
  collectGarbage("major");
  const before = oldSpaceUsed();
  let link: ClientLink | null = null;
  for (let i = 0; i < LINKS; i++) link = make({ destroyed: false, payload: new Array(PAYLOAD_BYTES / 8).fill(i) });
  expect(link?.gone).toBe(false);
  link = null;
  collectGarbage("minor");
  collectGarbage("minor");
  return oldSpaceUsed() - before;
}

describe("a client link dies young", () => {
  // An object literal with a getter here (a per-request closure as accessor) is a dictionary-mode
  // object built on V8's slow path: with it, everything the closure reached survived both
  // scavenges (8.9 MB promoted of 8 MB dropped), where the class lets all of it go.
  it("socketLink: what a dropped link reached is freed by the young-generation collector", () => {
    const socket = new PassThrough();
    const promoted = promotedBytes((response) => socketLink(socket, response as { destroyed: boolean }));
    expect(promoted).toBeLessThan((LINKS * PAYLOAD_BYTES) / 8);
  });

  it("signalLink: the same for the Fetch API's link", () => {
    const promoted = promotedBytes((payload) => {
      const signal = { aborted: false, payload, addEventListener() {}, removeEventListener() {} };
      return signalLink(signal as unknown as AbortSignal);
    });
    expect(promoted).toBeLessThan((LINKS * PAYLOAD_BYTES) / 8);
  });
});
