import { describe, expect, it } from "vitest";
import { forwardRequestHeaders } from "../../src/data-plane/headers.ts";

/**
 * The request headers of a forward, judged on the function both entries and both paths (HTTP and
 * WebSocket) build them with; data-plane-forward and data-plane-websocket check the same end to end.
 */
const inbound = new Headers({
  host: "pinboard.example",
  "x-forwarded-for": "6.6.6.6",
  "x-forwarded-host": "app.example",
  "x-forwarded-proto": "https",
  forwarded: "for=6.6.6.6;proto=https",
  "x-real-ip": "6.6.6.6",
  "x-custom": "kept",
});
const underscored: Array<[string, string]> = [
  ["pinboard_epoch", "1"],
  ["Pinboard_Attestation", "forged"],
  ["pinboard_session-secret", "s"],
  ["x_forwarded_for", "6.6.6.6"],
  ["x_forwarded_host", "evil.example"],
  ["x_real_ip", "6.6.6.6"],
];
const base = { peer: "10.0.0.7", attestation: "jws", epoch: "42", host: "pinboard.example", proto: "http" };

function withUnderscores(): Headers {
  const headers = new Headers(inbound);
  // Headers refuses no token character; `_` is one.
  for (const [name, value] of underscored) headers.append(name, value);
  return headers;
}

describe("forwardRequestHeaders", () => {
  it("from an untrusted peer: X-Forwarded-* are what Pinboard observed, Forwarded and X-Real-IP are dropped", () => {
    const out = forwardRequestHeaders(withUnderscores(), { ...base, trustedPeer: false });
    expect(out["x-forwarded-for"]).toBe("10.0.0.7");
    expect(out["x-forwarded-host"]).toBe("pinboard.example");
    expect(out["x-forwarded-proto"]).toBe("http");
    expect(out.forwarded).toBeUndefined();
    expect(out["x-real-ip"]).toBeUndefined();
    expect(out["x-custom"]).toBe("kept");
    expect(out.host).toBeUndefined();
  });

  it("from a trusted proxy: its X-Forwarded-Host/-Proto, Forwarded and X-Real-IP pass; X-Forwarded-For is still the peer", () => {
    const out = forwardRequestHeaders(withUnderscores(), { ...base, trustedPeer: true });
    expect(out["x-forwarded-for"]).toBe("10.0.0.7");
    expect(out["x-forwarded-host"]).toBe("app.example");
    expect(out["x-forwarded-proto"]).toBe("https");
    expect(out.forwarded).toBe("for=6.6.6.6;proto=https");
    expect(out["x-real-ip"]).toBe("6.6.6.6");
  });

  it.each([false, true])("drops underscore spellings of Pinboard's and the forwarding headers (trusted peer: %s)", (trustedPeer) => {
    const out = forwardRequestHeaders(withUnderscores(), { ...base, trustedPeer });
    expect(Object.keys(out).filter((name) => name.includes("_"))).toEqual([]);
    expect(out["pinboard-epoch"]).toBe("42");
    expect(out["pinboard-attestation"]).toBe("jws");
  });
});
