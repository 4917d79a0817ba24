import { describe, expect, it } from "vitest";
import { base64url, base64urlDecode } from "../../src/contract/base64url.ts";

/** base64url without padding (RFC 4648 §5), as JWS and Pinboard's opaque tokens use it. */

const bytes = (text: string) => new TextEncoder().encode(text);
const text = (decoded: Uint8Array | null) => (decoded === null ? null : new TextDecoder().decode(decoded));

/** RFC 4648's test vectors (section 10): [input, its base64url without padding]. */
const RFC_4648_VECTORS = [
  ["", ""],
  ["f", "Zg"],
  ["fo", "Zm8"],
  ["foo", "Zm9v"],
  ["foob", "Zm9vYg"],
  ["fooba", "Zm9vYmE"],
  ["foobar", "Zm9vYmFy"],
] as const;

describe("base64url", () => {
  it.each(RFC_4648_VECTORS)("encodes RFC 4648's test vector %j as %j, without padding", (input, encoded) => {
    expect(base64url(bytes(input))).toBe(encoded);
  });

  it("uses - and _ where base64 has + and /", () => {
    expect(base64url(new Uint8Array([0xfb, 0xff]))).toBe("-_8");
    expect(base64url(new Uint8Array([0xff, 0xff, 0xff]))).toBe("____");
    expect(base64url(new Uint8Array([0xf8, 0x00, 0x00]))).toBe("-AAA");
  });

  it("encodes inputs past one 32 KiB chunk whole", () => {
    const big = Uint8Array.from({ length: 0x8000 * 2 + 5 }, (_, i) => (i * 7) & 0xff);
    expect(base64url(big)).toBe(Buffer.from(big).toString("base64url"));
  });
});

describe("base64urlDecode", () => {
  it.each(RFC_4648_VECTORS)("decodes %j back from %j", (input, encoded) => {
    expect(text(base64urlDecode(encoded))).toBe(input);
  });

  it("decodes - and _ where base64 has + and /", () => {
    expect([...base64urlDecode("-_8")!]).toEqual([0xfb, 0xff]);
  });

  it("is null for padding, the standard alphabet's + and /, other characters and an impossible length", () => {
    for (const input of ["Zg==", "Zm8=", "+_8", "-/8", "Zm9v YmFy", "Zm9v\n", "Zm9v.", "Z", "Zm9vY"]) {
      expect(base64urlDecode(input)).toBeNull();
    }
  });
});
