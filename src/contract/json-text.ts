/**
 * JSON from text some other party wrote (an HTTP answer, a stored field), where text that is not
 * JSON is an answer to handle rather than an error to throw. Shared by the CLI, the console page,
 * the worker library and the operator API, so each reads a body the same way.
 */

/** The value `text` holds as JSON; undefined when it is not JSON (empty text included). */
export function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/** The object `text` holds as JSON; null when it is not JSON or holds anything but an object (an array, say). */
export function parseJsonObject(text: string): Record<string, unknown> | null {
  const value = parseJson(text);
  return typeof value === "object" && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : null;
}
