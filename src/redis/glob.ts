/**
 * Redis glob patterns (MATCH of SCAN and HSCAN) built from literal text. In a glob, `*`, `?`,
 * `[`…`]` and `\` are special; each is escaped with a backslash, so the text matches only itself.
 */

/** The text with every glob character escaped. */
export function globEscape(text: string): string {
  return text.replace(/[*?[\]\\]/g, "\\$&");
}

/** A pattern matching exactly the strings that start with `prefix`. */
export function prefixPattern(prefix: string): string {
  return `${globEscape(prefix)}*`;
}
