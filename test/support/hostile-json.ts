import fc from "fast-check";

/**
 * fast-check arbitraries for hostile input, written as JSON *text* so that keys such as
 * "__proto__" reach JSON.parse verbatim (an object literal would set the prototype instead of
 * a key) and so that numbers JSON.stringify cannot produce (-0, 1e999, 30-digit integers) do.
 */

/** Keys that break naive merging and lookups, at every level. */
export const POLLUTION_KEYS = [
  "__proto__",
  "constructor",
  "prototype",
  "toString",
  "valueOf",
  "hasOwnProperty",
  "__defineGetter__",
  "isAdmin",
  "polluted",
];

/** Lone surrogates, BOMs, NULs, RTL marks, astral characters, fullwidth and Arabic digits. */
const ODD_STRINGS = [
  "\ud800",
  "\udfff",
  "a\ud83d",
  "\ud83dx",
  "\udc00\ud800",
  "\ufeff",
  "\u0000",
  "\u202e",
  "😀",
  "１２３",
  "١٢٣",
  "NaN",
  "Infinity",
  "-Infinity",
  "-0",
  "1e999",
  "0x1f",
  " 1",
  "1 ",
  "null",
  "undefined",
  "true",
  "[object Object]",
  "%00",
  "%E0%A4%A",
  "../../etc/passwd",
  "/",
  "//",
  "*",
  "/threads",
  "/echo",
  "a".repeat(257),
  "x".repeat(5000),
];

/** Numbers as JSON text, including what JSON.stringify never writes. */
const ODD_NUMBERS = [
  "-0",
  "0",
  "-0.0",
  "1e999",
  "-1e999",
  "1e-999",
  "4.9e-324",
  "1.7976931348623157e308",
  "9007199254740993",
  "-9007199254740993",
  "123456789012345678901234567890",
  "1E+2",
  "0.1e1",
  "2147483648",
  "4294967296",
  "65536",
  "65535",
  "1",
  "-1",
  "0.5",
];

export const hostileString: fc.Arbitrary<string> = fc.oneof(
  { weight: 3, arbitrary: fc.string({ maxLength: 40 }) },
  { weight: 2, arbitrary: fc.string({ unit: "binary", maxLength: 20 }) },
  { weight: 3, arbitrary: fc.constantFrom(...ODD_STRINGS) },
  { weight: 1, arbitrary: fc.constantFrom(...POLLUTION_KEYS) },
  { weight: 1, arbitrary: fc.integer({ min: 2000, max: 60_000 }).map((n) => "y".repeat(n)) },
  {
    weight: 1,
    arbitrary: fc
      .array(fc.constantFrom(...ODD_STRINGS.slice(0, 12), "a", "/", "-", "."), { maxLength: 8 })
      .map((parts) => parts.join("")),
  },
);

/** A JSON string literal; JSON.stringify writes lone surrogates as \\udXXX escapes, which JSON.parse turns back into them. */
const stringText = hostileString.map((s) => JSON.stringify(s));

const numberText: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(...ODD_NUMBERS),
  fc.integer().map(String),
  fc.double({ noNaN: true, noDefaultInfinity: true }).map((n) => JSON.stringify(n)),
);

const leafText: fc.Arbitrary<string> = fc.oneof(
  { weight: 4, arbitrary: stringText },
  { weight: 3, arbitrary: numberText },
  { weight: 1, arbitrary: fc.constantFrom("true", "false", "null") },
);

export const keyText: fc.Arbitrary<string> = fc
  .oneof(
    { weight: 2, arbitrary: fc.constantFrom(...POLLUTION_KEYS) },
    { weight: 2, arbitrary: fc.string({ maxLength: 12 }) },
    { weight: 1, arbitrary: hostileString },
  )
  .map((k) => JSON.stringify(k));

/** Arbitrary JSON text: nested arrays and objects with hostile keys at every level. */
export const hostileJsonText: fc.Arbitrary<string> = fc.letrec<{ value: string; array: string; object: string }>(
  (tie) => ({
    value: fc.oneof({ depthSize: "small", withCrossShrink: true }, leafText, tie("array"), tie("object")),
    array: fc.array(tie("value"), { maxLength: 5 }).map((items) => `[${items.join(",")}]`),
    object: fc
      .array(fc.tuple(keyText, tie("value")), { maxLength: 6 })
      .map((pairs) => `{${pairs.map(([k, v]) => `${k}:${v}`).join(",")}}`),
  }),
).value;

/** Deeply nested arrays or objects (JSON.parse must not be the thing that falls over). */
export const deepJsonText: fc.Arbitrary<string> = fc
  .tuple(fc.integer({ min: 100, max: 200_000 }), fc.constantFrom("array", "object", "proto"))
  .map(([depth, kind]) => {
    if (kind === "array") return "[".repeat(depth) + "]".repeat(depth);
    const key = kind === "proto" ? '{"__proto__":' : '{"a":';
    return `${key.repeat(depth)}1${"}".repeat(depth)}`;
  });

/** Not JSON at all, or almost: truncations, trailing garbage, comments, NaN literals. */
export const brokenJsonText: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(
    "",
    " ",
    "{",
    "}",
    "[",
    '{"a":',
    '{"a":1,}',
    "[1,]",
    "{'a':1}",
    "NaN",
    "Infinity",
    "-",
    "01",
    '{"a":NaN}',
    "/* */{}",
    "{}{}",
    "\u0000",
    "\ufeff{}",
    "nul",
    "tru",
    '"\\ud800"',
    '"\\x41"',
    '"\\u12"',
  ),
  fc.string({ maxLength: 60 }),
  fc.string({ unit: "binary", maxLength: 30 }),
  hostileJsonText.map((text) => text.slice(0, Math.max(0, text.length - 1))),
  hostileJsonText.map((text) => `${text},`),
);

/** JSON derived from fc.jsonValue and fc.anything (whatever JSON.stringify makes of it). */
export const derivedJsonText: fc.Arbitrary<string> = fc.oneof(
  fc.json(),
  fc.jsonValue().map((v) => JSON.stringify(v)),
  fc
    .anything({
      maxDepth: 4,
      withNullPrototype: true,
      withObjectString: true,
      withSparseArray: true,
      withBoxedValues: true,
    })
    .map((v) => {
      try {
        return JSON.stringify(v) ?? "null";
      } catch {
        return "null";
      }
    }),
);

/**
 * A valid body turned hostile, a little at a time so that most bodies still reach the code
 * behind the schema: up to three fields dropped or given hostile JSON values, sometimes extra
 * pairs (pollution keys first), in either order. `base` maps keys to JSON text of their values.
 */
export function mutatedObjectText(
  base: fc.Arbitrary<Record<string, string>>,
  valueText: fc.Arbitrary<string> = hostileJsonText,
): fc.Arbitrary<string> {
  return base.chain((fields) => {
    const keys = Object.keys(fields);
    const mutation = fc.tuple(fc.nat(Math.max(0, keys.length - 1)), fc.option(valueText, { nil: null, freq: 4 }));
    return fc
      .tuple(
        fc.array(mutation, { maxLength: 3 }),
        fc.oneof(
          { weight: 3, arbitrary: fc.constant<Array<[string, string]>>([]) },
          { weight: 1, arbitrary: fc.array(fc.tuple(keyText, valueText), { minLength: 1, maxLength: 3 }) },
        ),
        fc.boolean(),
      )
      .map(([mutations, added, reverse]) => {
        const pairs = new Map<string, string | null>(keys.map((k) => [k, fields[k]!]));
        for (const [index, value] of mutations) pairs.set(keys[index]!, value);
        const out: Array<[string, string]> = [...pairs]
          .filter((p): p is [string, string] => p[1] !== null)
          .map(([k, v]) => [JSON.stringify(k), v]);
        out.push(...added);
        if (reverse) out.reverse();
        return `{${out.map(([k, v]) => `${k}:${v}`).join(",")}}`;
      });
  });
}

/** Mostly `valid`, sometimes one of `invalid` (both JSON text). */
export function mostly(valid: string[], invalid: string[]): fc.Arbitrary<string> {
  return fc.oneof(
    { weight: 12, arbitrary: fc.constantFrom(...valid) },
    { weight: 1, arbitrary: fc.constantFrom(...invalid) },
  );
}

/** Any request body text of the fuzz: mostly mutations of the route's valid body. */
export function bodyText(valid: fc.Arbitrary<Record<string, string>>): fc.Arbitrary<string> {
  return fc.oneof(
    { weight: 8, arbitrary: mutatedObjectText(valid) },
    {
      weight: 6,
      arbitrary: valid.map(
        (fields) =>
          `{${Object.entries(fields)
            .map(([k, v]) => `${JSON.stringify(k)}:${v}`)
            .join(",")}}`,
      ),
    },
    { weight: 2, arbitrary: hostileJsonText },
    { weight: 2, arbitrary: derivedJsonText },
    { weight: 2, arbitrary: brokenJsonText },
    { weight: 1, arbitrary: mutatedObjectText(valid).map((o) => `[${o}]`) },
    { weight: 1, arbitrary: deepJsonText },
  );
}

/** Header values a client can send (ByteStrings without CR/LF), hostile where it matters. */
export const headerValue: fc.Arbitrary<string> = fc.oneof(
  fc.string({ unit: "grapheme-ascii", maxLength: 40 }).map((s) => s.replace(/[\r\n\0]/g, "")),
  fc.constantFrom(
    "",
    " ",
    "0",
    "-1",
    "1e3",
    "999999999999999999999",
    "NaN",
    "ÿþ",
    "\t x \t",
    "a".repeat(3000),
    "%E0%A4%A",
    "1, 2",
    "*",
  ),
);

export const contentTypes: fc.Arbitrary<string | undefined> = fc.constantFrom(
  undefined,
  "application/json",
  "application/json; charset=utf-8",
  "application/json; charset=utf-16",
  "text/plain",
  "application/x-www-form-urlencoded",
  "multipart/form-data; boundary=x",
  "application/octet-stream",
  "",
  "garbage/\u00ff",
  "application/json, text/html",
);

/** A query string built from hostile keys and values, raw (unencoded) or percent-encoded. */
export const queryString: fc.Arbitrary<string> = fc.oneof(
  fc
    .array(
      fc.tuple(
        fc.oneof(
          fc.constantFrom("ns", "prefix", "tag", "ns[]", "__proto__", "constructor", "", "tag[__proto__]"),
          fc.string({ maxLength: 8 }),
        ),
        fc.oneof(hostileString, fc.constantFrom("/threads", "/echo", "H~", "ws:W", " ", "")),
        fc.boolean(),
      ),
      { maxLength: 5 },
    )
    .map((pairs) =>
      pairs
        .map(([k, v, encode]) =>
          encode
            ? `${percentEncode(k, /[A-Za-z0-9._~-]/)}=${percentEncode(v, /[A-Za-z0-9._~-]/)}`
            : `${percentEncode(k, /[\x21-\x7e]/)}=${percentEncode(v, /[\x21-\x7e]/)}`,
        )
        .join("&"),
    ),
  fc.constantFrom(
    "%",
    "%%",
    "%E0%A4%A",
    "%ED%A0%80",
    "%C0%AF",
    "%FF%FE",
    "=",
    "&&&",
    "ns",
    "ns=",
    "ns=%2Fthreads",
    "tag=%20",
    "a=1&a=2&a=3",
    "%ZZ=%ZZ",
    "?",
    "ns=/threads&ns=/nope",
    "ns=%2F%00",
    "tag=%F0%9F%98%80",
  ),
);

/**
 * Percent-encodes every UTF-8 byte of `s` outside `keep` (lone surrogates become U+FFFD, as
 * TextEncoder writes them). `#` always is, so the query stays a query.
 */
export function percentEncode(s: string, keep: RegExp): string {
  let out = "";
  for (const byte of new TextEncoder().encode(s)) {
    const c = String.fromCharCode(byte);
    out += byte < 0x80 && c !== "#" && keep.test(c) ? c : `%${byte.toString(16).toUpperCase().padStart(2, "0")}`;
  }
  return out;
}
