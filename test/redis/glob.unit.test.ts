import { describe, expect, it } from "vitest";
import { globEscape, prefixPattern } from "../../src/redis/glob.ts";

/**
 * Glob patterns from literal text (the overview's id prefix as HSCAN MATCH): each of Redis'
 * glob characters is escaped, nothing else is touched. What Redis makes of the patterns is
 * test/redis/hscan-match.test.ts.
 */
describe("globEscape / prefixPattern", () => {
  it("escapes * ? [ ] and \\ with a backslash and leaves everything else", () => {
    expect(globEscape("a*b?c[d]e\\f")).toBe("a\\*b\\?c\\[d\\]e\\\\f");
    expect(globEscape("plain-id_1.2~x^!")).toBe("plain-id_1.2~x^!");
    expect(globEscape("")).toBe("");
  });

  it("ends the escaped prefix with one *", () => {
    expect(prefixPattern("room-")).toBe("room-*");
    expect(prefixPattern("g*")).toBe("g\\**");
    expect(prefixPattern("[")).toBe("\\[*");
  });
});
