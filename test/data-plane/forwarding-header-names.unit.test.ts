import { describe, expect, it } from "vitest";
import { forwardRequestHeaders } from "../../src/data-plane/header-hygiene.ts";
import { DOCUMENTED_FORWARDING_HEADERS } from "../support/forwarding-header-names.ts";

/**
 * Every forwarding header the documentation names, written out here rather than read from
 * FORWARDING_HEADERS, each sent alone: from a peer outside PINBOARD_TRUSTED_PROXIES the client's
 * value never reaches the worker, in its own spelling or with underscores; from a trusted one it
 * passes (X-Forwarded-For aside: always the observed peer). Dropping any name from the filter
 * fails here. forwarding-headers.test.ts sends them end to end.
 */

const DOCUMENTED = DOCUMENTED_FORWARDING_HEADERS;
/** Those with a dash to spell with an underscore (Forwarded has none). */
const DASHED = DOCUMENTED.filter((name) => name.includes("-"));

const input = { peer: "10.0.0.7", attestation: "jws", epoch: "42", host: "pinboard.example", proto: "http" };
const SPOOFED = "spoofed-by-client";

/** Whether the client's value, sent only as `sent`, reaches the worker as `name` or as `sent`. */
function reaches(name: string, sent: string, trustedPeer: boolean): boolean {
  const out = forwardRequestHeaders(new Headers([[sent, SPOOFED]]), { ...input, trustedPeer });
  return out[name.toLowerCase()] === SPOOFED || out[sent.toLowerCase()] === SPOOFED;
}

const underscored = (name: string) => name.replaceAll("-", "_");

describe("the documented forwarding headers, one by one", () => {
  it("are 37 distinct names", () => {
    expect(new Set(DOCUMENTED.map((n) => n.toLowerCase())).size).toBe(37);
  });

  it("from an untrusted peer: the client's value reaches the worker for none, nor with underscores", () => {
    expect(DOCUMENTED.filter((name) => reaches(name, name, false))).toEqual([]);
    expect(DASHED.filter((name) => reaches(name, underscored(name), false))).toEqual([]);
  });

  it("from a trusted proxy: every one passes but X-Forwarded-For; the underscore spellings never do", () => {
    expect(DOCUMENTED.filter((name) => name !== "X-Forwarded-For" && !reaches(name, name, true))).toEqual([]);
    const out = forwardRequestHeaders(new Headers([["X-Forwarded-For", SPOOFED]]), { ...input, trustedPeer: true });
    expect(out["x-forwarded-for"]).toBe("10.0.0.7");
    expect(DASHED.filter((name) => reaches(name, underscored(name), true))).toEqual([]);
  });
});
