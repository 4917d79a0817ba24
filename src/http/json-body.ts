import type { Context } from "hono";
import type { z } from "zod";
import { badRequest, PinboardError } from "../errors/pinboard-error.ts";
import { describeSchema } from "./describe-schema.ts";
import { readCapped } from "./read-capped.ts";

export const MiB = 1024 * 1024;

/** A route's body schema together with the `expected {...}` text of its 400. */
export interface BodySchema<T> {
  schema: z.ZodType<T>;
  expected: string;
  limit: number;
}

export function bodySchema<T>(schema: z.ZodType<T>, limit = MiB): BodySchema<T> {
  return { schema, expected: `expected ${describeSchema(schema)}`, limit };
}

/**
 * Reads and validates a JSON body: 413 `body too large` past the limit (declared length or the
 * bytes actually streamed; the rest is never read), 400 `invalid json`, 400 `expected {...}`.
 * A string (value or key) holding a lone surrogate (`"\ud800"`, legal JSON grammar but not
 * Unicode) is `invalid json` too: it cannot be encoded as UTF-8, so Redis would store or compare
 * something else than the worker sent, and the Lua scripts' cjson refuses it outright.
 */
export async function readJsonBody<T>(c: Context, body: BodySchema<T>): Promise<T> {
  const text = await readLimitedText(c.req.raw, body.limit);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw badRequest("invalid json");
  }
  // The decoded text itself never holds a lone surrogate (TextDecoder replaces bad UTF-8), so
  // only a \uD800–\uDFFF escape can produce one: walk the value only when the text has one.
  if (/\\u[dD][89a-fA-F]/.test(text) && !isWellFormed(value)) throw badRequest("invalid json");
  const parsed = body.schema.safeParse(value);
  if (!parsed.success) throw badRequest(body.expected);
  return parsed.data;
}

const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/**
 * Every string of a parsed JSON value, keys included, is well-formed UTF-16. Iterative: bodies
 * nest deeper than the stack.
 */
function isWellFormed(value: unknown): boolean {
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const item = stack.pop();
    if (typeof item === "string") {
      if (LONE_SURROGATE.test(item)) return false;
    } else if (Array.isArray(item)) {
      for (const element of item) stack.push(element);
    } else if (item !== null && typeof item === "object") {
      for (const [key, element] of Object.entries(item)) {
        if (LONE_SURROGATE.test(key)) return false;
        stack.push(element);
      }
    }
  }
  return true;
}

const tooLarge = () => PinboardError.of(413, "body too large");

async function readLimitedText(request: Request, limit: number): Promise<string> {
  const declared = request.headers.get("content-length");
  if (declared !== null && Number(declared) > limit) throw tooLarge();
  const bytes = await readCapped(request.body, limit);
  if (bytes === null) throw tooLarge();
  return new TextDecoder().decode(bytes);
}
