import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  FORWARDING_HEADERS,
  forwardRequestHeaders,
  forwardResponseHeaders,
  forwardResponseRecord,
} from "../../src/data-plane/header-hygiene.ts";

/**
 * The headers of a forward, judged on the functions both entries and both paths (HTTP and
 * WebSocket) build them with; forward.test.ts and websocket.test.ts check the same end to end.
 * Requests: what a client may and may not make Pinboard pass on. Responses: the two forms of the
 * client-facing headers, Headers (any fetch) and the plain object the Node entry writes for a whole
 * answer from its own transport, which must filter alike.
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

  it.each([false, true])(
    "drops underscore spellings of Pinboard's and the forwarding headers (trusted peer: %s)",
    (trustedPeer) => {
      const out = forwardRequestHeaders(withUnderscores(), { ...base, trustedPeer });
      expect(Object.keys(out).filter((name) => name.includes("_"))).toEqual([]);
      expect(out["pinboard-epoch"]).toBe("42");
      expect(out["pinboard-attestation"]).toBe("jws");
    },
  );
});

describe("forwardRequestHeaders: what a client cannot make Pinboard drop or pass", () => {
  it("carries no framing header (the transport writes the framing) and Connection cannot remove what Pinboard sets", () => {
    const headers = new Headers({
      connection:
        "content-length, transfer-encoding, host, x-forwarded-for, pinboard-epoch, pinboard-attestation, x-hop",
      "content-length": "5",
      "x-hop": "dropped",
      "x-kept": "kept",
    });
    const out = forwardRequestHeaders(headers, { ...base, trustedPeer: false });
    expect(out["content-length"]).toBeUndefined();
    expect(out["transfer-encoding"]).toBeUndefined();
    expect(out["x-hop"]).toBeUndefined();
    expect(out["x-kept"]).toBe("kept");
    expect(out["x-forwarded-for"]).toBe("10.0.0.7");
    expect(out["pinboard-epoch"]).toBe("42");
    expect(out["pinboard-attestation"]).toBe("jws");
  });

  const FORWARDING_STYLE = [
    ..."x-forwarded-port x-forwarded-prefix x-forwarded-scheme x-forwarded-ssl x-forwarded-server x-forwarded-uri".split(
      " ",
    ),
    ..."true-client-ip x-client-ip x-cluster-client-ip x-original-url cf-connecting-ip".split(" "),
  ];

  it("drops every forwarding-style header (and its underscore spelling) from an untrusted peer, passes them from a trusted one", () => {
    const headers = new Headers();
    for (const name of FORWARDING_STYLE) {
      headers.append(name, "spoofed");
      headers.append(name.replaceAll("-", "_"), "spoofed");
    }
    const untrusted = forwardRequestHeaders(headers, { ...base, trustedPeer: false });
    expect(
      FORWARDING_STYLE.flatMap((n) => [n, n.replaceAll("-", "_")]).filter((n) => untrusted[n] !== undefined),
    ).toEqual([]);
    const trusted = forwardRequestHeaders(headers, { ...base, trustedPeer: true });
    expect(FORWARDING_STYLE.filter((n) => trusted[n] !== "spoofed")).toEqual([]);
    expect(Object.keys(trusted).filter((n) => n.includes("_"))).toEqual([]);
  });
});

describe("forwardRequestHeaders: the forwarding headers, every name (forwarding-headers.test.ts sends them end to end)", () => {
  const all = () => new Headers(FORWARDING_HEADERS.map((n): [string, string] => [n, `spoofed-${n}`]));
  const passed = (out: Record<string, string>) => FORWARDING_HEADERS.filter((n) => out[n] === `spoofed-${n}`);

  it("from an untrusted peer none passes", () => {
    const out = forwardRequestHeaders(all(), { ...base, trustedPeer: false });
    expect(passed(out)).toEqual([]);
  });

  it("from a trusted proxy all pass but X-Forwarded-For, which is the peer", () => {
    const out = forwardRequestHeaders(all(), { ...base, trustedPeer: true });
    expect(passed(out)).toEqual(FORWARDING_HEADERS.filter((n) => n !== "x-forwarded-for"));
    expect(out["x-forwarded-for"]).toBe("10.0.0.7");
  });

  it("the edge's own claims are set over the client's and a trusted proxy's, never their underscore spellings", () => {
    const edge = { "cf-ipcountry": "NZ", "cf-visitor": '{"scheme":"https"}' };
    for (const trustedPeer of [false, true]) {
      const headers = all();
      headers.append("cf_ipcountry", "XX");
      const out = forwardRequestHeaders(headers, { ...base, trustedPeer, edge });
      expect(out["cf-ipcountry"]).toBe("NZ");
      expect(out["cf-visitor"]).toBe('{"scheme":"https"}');
      expect(out.cf_ipcountry).toBeUndefined();
      expect(passed(out)).toEqual(
        trustedPeer ? FORWARDING_HEADERS.filter((n) => n !== "x-forwarded-for" && !(n in edge)) : [],
      );
    }
  });
});

describe("forwardResponseHeaders and forwardResponseRecord", () => {
  const worker = [
    ["Service-Worker-Allowed", "/"],
    ["Pinned-Refusal", "lease-unhealthy"],
    ["Pinboard-Epoch", "1"],
    ["Connection", "content-length, x-hop"],
    ["X-Hop", "1"],
    ["Content-Length", "5"],
    ["X-Kept", "yes"],
  ];

  it("drop Service-Worker-Allowed, the refusal, Pinboard-* and Connection-named headers, but never Content-Length", () => {
    const record = forwardResponseRecord(worker.flat(), 200);
    expect(record).toEqual({ "content-length": "5", "x-kept": "yes", "x-accel-buffering": "no" });
    const headers = forwardResponseHeaders(new Headers(worker as Array<[string, string]>), { status: 200 });
    expect(Object.fromEntries(headers)).toEqual({ "content-length": "5", "x-kept": "yes", "x-accel-buffering": "no" });
  });

  it("drop a 204's Content-Length (RFC 9110 §8.6)", () => {
    expect(forwardResponseRecord(["Content-Length", "5"], 204)).toEqual({ "x-accel-buffering": "no" });
    expect(Object.fromEntries(forwardResponseHeaders(new Headers({ "content-length": "5" }), { status: 204 }))).toEqual(
      { "x-accel-buffering": "no" },
    );
  });
});

/** The Headers form as `name → value`, Set-Cookie as its list. */
function asRecord(headers: Headers): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  headers.forEach((value, name) => {
    if (name !== "set-cookie") out[name] = value;
  });
  const cookies = headers.getSetCookie();
  if (cookies.length) out["set-cookie"] = cookies;
  return out;
}

function headersOf(raw: string[]): Headers {
  const h = new Headers();
  for (let i = 0; i < raw.length; i += 2) h.append(raw[i]!, raw[i + 1]!);
  return h;
}

describe("forwardResponseRecord", () => {
  it("drops hop-by-hop, Connection-named, Pinboard-* and Pinned-Refusal headers and adds X-Accel-Buffering", () => {
    const raw = [
      "Content-Type",
      "text/plain",
      "Connection",
      "keep-alive, X-Private",
      "X-Private",
      "secret",
      "Keep-Alive",
      "timeout=5",
      "Transfer-Encoding",
      "chunked",
      "Pinboard-Attestation",
      "leak",
      "Pinned-Refusal",
      "lease-unhealthy",
      "Set-Cookie",
      "a=1",
      "Set-Cookie",
      "b=2",
      "Vary",
      "accept",
      "Vary",
      "origin",
    ];
    expect({ ...forwardResponseRecord(raw) }).toEqual({
      "content-type": "text/plain",
      "set-cookie": ["a=1", "b=2"],
      vary: "accept, origin",
      "x-accel-buffering": "no",
    });
  });

  it("equals forwardResponseHeaders on any header lines", () => {
    const name = fc.oneof(
      fc.constantFrom(
        "content-type",
        "Set-Cookie",
        "connection",
        "Connection",
        "keep-alive",
        "upgrade",
        "te",
        "pinboard-epoch",
        "Pinned-Refusal",
        "vary",
        "x-a",
        "X-B",
        "content-length",
        "content-encoding",
      ),
      fc.stringMatching(/^[a-z][a-z0-9-]{0,8}$/),
    );
    const value = fc.stringMatching(/^[ -~]{0,12}$/);
    fc.assert(
      fc.property(fc.array(fc.tuple(name, value), { maxLength: 12 }), (lines) => {
        const raw = lines.flat();
        expect({ ...forwardResponseRecord(raw) }).toEqual(asRecord(forwardResponseHeaders(headersOf(raw))));
      }),
      {
        numRuns: 1000,
        examples: [
          [
            [
              ["X-B", ""],
              ["X-B", ""],
            ],
          ],
          [
            [
              ["vary", " a "],
              ["Vary", ""],
            ],
          ],
          [
            [
              ["a", ""],
              ["a", ""],
              ["a", ""],
            ],
          ],
        ],
      },
    );
  });
});

/** RFC 9110 §7.6.1's hop-by-hop headers and their kin: none crosses Pinboard, either way. */
const HOP_BY_HOP: Array<[string, string]> = [
  ["connection", "close"],
  ["keep-alive", "timeout=5"],
  ["proxy-authenticate", 'Basic realm="proxy"'],
  ["proxy-authorization", "Basic cHJveHk6c2VjcmV0"],
  ["proxy-connection", "keep-alive"],
  ["te", "trailers"],
  ["trailer", "x-checksum"],
  ["upgrade", "h2c"],
];

describe("hop-by-hop headers are dropped both ways", () => {
  it("a request keeps none of them (a client's proxy credential never reaches the worker)", () => {
    const headers = new Headers([...HOP_BY_HOP, ["x-custom", "kept"]]);
    const out = forwardRequestHeaders(headers, { ...base, trustedPeer: false });
    expect(Object.keys(out).sort()).toEqual([
      "pinboard-attestation",
      "pinboard-epoch",
      "x-custom",
      "x-forwarded-for",
      "x-forwarded-host",
      "x-forwarded-proto",
    ]);
  });

  it("an answer keeps none of them, as Headers and as the Node entry's record", () => {
    const upstream = new Headers([...HOP_BY_HOP, ["x-custom", "kept"]]);
    expect([...forwardResponseHeaders(upstream).keys()].sort()).toEqual(["x-accel-buffering", "x-custom"]);
    const record = forwardResponseRecord([...HOP_BY_HOP.flat(), "X-Custom", "kept"]);
    expect(record).toEqual({ "x-custom": "kept", "x-accel-buffering": "no" });
  });
});
