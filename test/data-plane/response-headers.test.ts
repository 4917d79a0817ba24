import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { forwardResponseHeaders, forwardResponseRecord } from "../../src/data-plane/header-hygiene.ts";

/**
 * The two forms of the client-facing response headers: Headers (any fetch) and the plain object
 * the Node entry writes for a whole answer from its own transport. They must filter alike.
 */

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
