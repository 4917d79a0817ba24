import { describe, expect, it } from "vitest";
import { forwardRequestHeaders } from "../../src/data-plane/header-hygiene.ts";

/**
 * Every forwarding header the documentation names, written out here rather than read from
 * FORWARDING_HEADERS, each sent alone: from a peer outside PINBOARD_TRUSTED_PROXIES the client's
 * value never reaches the worker, in its own spelling or with underscores; from a trusted one it
 * passes (X-Forwarded-For aside: always the observed peer). Dropping any name from the filter
 * fails here. forwarding-headers.test.ts sends them end to end.
 */

/** docs/decisions.md, "Forwarding headers" under Headers: Pinboard's three, then the dropped ones. */
const HEADERS_SECTION = [
  "X-Forwarded-For",
  "X-Forwarded-Host",
  "X-Forwarded-Proto",
  "Forwarded",
  "X-Real-IP",
  "X-Forwarded-Port",
  "X-Forwarded-Prefix",
  "X-Forwarded-Scheme",
  "X-Forwarded-Ssl",
  "X-Forwarded-Server",
  "X-Forwarded-Uri",
  "X-Forwarded",
  "True-Client-IP",
  "X-Client-IP",
  "X-Cluster-Client-IP",
  "Client-IP",
  "CF-Connecting-IP",
  "X-Original-URL",
  "X-Original-Host",
  "X-Rewrite-URL",
];
/** docs/decisions.md, "Forwarding headers: one list, trusted proxies only": issue 40's and its family. */
const ISSUE_40_SECTION = [
  "Fastly-Client-IP",
  "X-ProxyUser-Ip",
  "X-Envoy-External-Address",
  "Forwarded-For",
  "Front-End-Https",
  "X-Url-Scheme",
  "X-Host",
  "CF-Connecting-IPv6",
  "CF-Pseudo-IPv4",
  "CF-IPCountry",
  "CF-Visitor",
  "X-Original-Forwarded-For",
  "X-Forwarded-Protocol",
  "X-Originating-IP",
  "X-Remote-IP",
  "X-Remote-Addr",
  "X-Original-URI",
];
const DOCUMENTED = [...HEADERS_SECTION, ...ISSUE_40_SECTION];
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
