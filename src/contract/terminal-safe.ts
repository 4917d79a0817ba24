/**
 * Worker- and client-controlled strings (a clientId, a hostname, a tag, an error a worker sent)
 * reach an operator's terminal through the CLI and the logs. A terminal obeys the control codes
 * inside them: ESC and the C1 CSI (U+009B) start sequences that erase lines, move the cursor, set
 * the title or write the clipboard (OSC 52); CR and the line separators let a string overwrite or
 * forge a row; the bidirectional controls reorder what is shown. Each of these code points is
 * shown as its JavaScript escape (`\u001b`) instead, which no terminal acts on and which JSON
 * reads back as the same character:
 *
 *   - C0 (U+0000–U+001F, tab, CR and LF included), DEL (U+007F), C1 (U+0080–U+009F);
 *   - the bidirectional embeddings, overrides and isolates (U+202A–U+202E, U+2066–U+2069) and
 *     marks (U+200E LRM, U+200F RLM, U+061C ALM): invisible, they make text read otherwise;
 *   - the line and paragraph separators (U+2028, U+2029), which some terminals break lines on.
 *
 * Printable text of every script (é, 日本, emoji) is left alone. A backslash is left alone too:
 * a string that spells `\u001b` shows those six characters, which a terminal does not act on.
 */
// biome-ignore lint/suspicious/noControlCharactersInRegex: these are the control characters this module escapes
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

/** The same set without LF: text whose line breaks are its own layout (a table, JSON). */
const CONTROL_BUT_LF =
  // biome-ignore lint/suspicious/noControlCharactersInRegex: these are the control characters this module escapes
  /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

const shown = (c: string) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`;

/** One value (a table cell, a name) for a terminal: every control shown as `\uXXXX`, LF included. */
export function terminalSafe(value: string): string {
  return value.replace(CONTROL, shown);
}

/**
 * Text whose own line breaks are layout (a rendered table, a JSON document, a log line): every
 * control but LF shown as `\uXXXX`. JSON stays valid JSON with the same values, as JSON already
 * escapes LF inside its strings.
 */
export function terminalSafeLines(text: string): string {
  return text.replace(CONTROL_BUT_LF, shown);
}
