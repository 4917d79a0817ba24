import { describe, expect, it } from "vitest";
import { terminalSafe, terminalSafeLines } from "../../src/contract/terminal-safe.ts";

/**
 * What a terminal must never receive raw from a worker or client string: C0 (tab, CR and LF
 * included), DEL, C1, the bidirectional controls and marks, and the line and paragraph
 * separators, each shown as its `\uXXXX` escape; printable text of any script is untouched.
 */

const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

/** Every code point the issue lists, written out range by range (not derived from the source). */
const CONTROLS: Record<string, number[]> = {
  C0: range(0x00, 0x1f),
  DEL: [0x7f],
  C1: range(0x80, 0x9f),
  "bidi embeddings and overrides": range(0x202a, 0x202e),
  "bidi isolates": range(0x2066, 0x2069),
  "bidi marks": [0x200e, 0x200f, 0x061c],
  "line and paragraph separators": [0x2028, 0x2029],
};

const escaped = (cp: number) => `\\u${cp.toString(16).padStart(4, "0")}`;

describe("terminalSafe", () => {
  for (const [name, codePoints] of Object.entries(CONTROLS)) {
    it(`shows every code point of ${name} as its \\uXXXX escape, between other text`, () => {
      for (const cp of codePoints) {
        const raw = `a${String.fromCodePoint(cp)}b`;
        expect(terminalSafe(raw), `U+${cp.toString(16)}`).toBe(`a${escaped(cp)}b`);
      }
    });
  }

  it("escapes every control of a hostile string and nothing else", () => {
    const hostile = "w\u001b[2K\u001b]0;title\u0007\u001b]52;c;cGF5bG9hZA==\u0007\u009b31m\u202eevil\u007f\r";
    expect(terminalSafe(hostile)).toBe(
      "w\\u001b[2K\\u001b]0;title\\u0007\\u001b]52;c;cGF5bG9hZA==\\u0007\\u009b31m\\u202eevil\\u007f\\u000d",
    );
  });

  it("leaves printable text of every script alone: ASCII, Latin-1, CJK, emoji, a backslash", () => {
    const printable = " ~AZaz09/\\é¡ÿĀ日本語😀👩‍👩‍👧\u00a0\u200d\u2030\u2065\u206a\u2027\u202f\u0600\u061d";
    expect(terminalSafe(printable)).toBe(printable);
    for (const cp of [0x20, 0x7e, 0xa0, 0x061b, 0x061d, 0x200d, 0x2010, 0x2027, 0x202f, 0x2065, 0x206a])
      expect(terminalSafe(String.fromCodePoint(cp))).toBe(String.fromCodePoint(cp));
  });

  it("reads back through JSON as the same characters", () => {
    const all = Object.values(CONTROLS)
      .flat()
      .map((cp) => String.fromCodePoint(cp))
      .join("");
    expect(JSON.parse(`"${terminalSafe(all)}"`)).toBe(all);
  });
});

describe("terminalSafeLines", () => {
  it("keeps LF as the text's own line break and escapes every other control", () => {
    for (const cp of Object.values(CONTROLS).flat()) {
      const raw = `a${String.fromCodePoint(cp)}b\nc`;
      expect(terminalSafeLines(raw), `U+${cp.toString(16)}`).toBe(cp === 0x0a ? raw : `a${escaped(cp)}b\nc`);
    }
  });

  it("keeps JSON valid with the same values", () => {
    const value = { clientId: "x\u001b]52;c;AA==\u0007\u009b\u202e\u2028\u007f", n: [1, "é😀"] };
    const text = terminalSafeLines(JSON.stringify(value, null, 2));
    // biome-ignore lint/suspicious/noControlCharactersInRegex: the test looks for raw control characters
    expect(text).not.toMatch(/[\u001b\u0007\u009b\u202e\u2028\u007f]/);
    expect(JSON.parse(text)).toEqual(value);
  });
});
