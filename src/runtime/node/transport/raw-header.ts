/**
 * One header of a node:http message read from its `rawHeaders`, without `message.headers`: Node
 * builds that object (every name lower-cased, every value copied) on first access, a cost per
 * request the data plane does not need for the one or two fields it reads. Each function keeps
 * the semantics `message.headers` has for the field it serves.
 */

/** The first value of `name` (lower-case), as `headers.host` keeps the first Host; undefined when absent. */
export function firstRawHeader(raw: readonly string[], name: string): string | undefined {
  // Stryker disable next-line EqualityOperator: a last name without a value reads raw[i + 1], undefined, as absent
  for (let i = 0; i + 1 < raw.length; i += 2) if (isNamed(raw[i]!, name)) return raw[i + 1];
  return undefined;
}

/** Every value of `name` (lower-case) joined with ", ", as `headers[name]` joins an unknown field's; "" when absent. */
export function joinedRawHeader(raw: readonly string[], name: string): string {
  let joined: string | undefined;
  for (let i = 0; i + 1 < raw.length; i += 2) {
    if (isNamed(raw[i]!, name)) joined = joined === undefined ? raw[i + 1]! : `${joined}, ${raw[i + 1]!}`;
  }
  return joined ?? "";
}

/** A raw header name (any case) is `name` (lower-case); the length check spares most lower-casing. */
const isNamed = (rawName: string, name: string): boolean =>
  rawName.length === name.length && rawName.toLowerCase() === name;
