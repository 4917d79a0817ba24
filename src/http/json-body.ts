import type { Context } from "hono";
import type { z } from "zod";
import { PinboardError, badRequest } from "../errors.ts";
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
 */
export async function readJsonBody<T>(c: Context, body: BodySchema<T>): Promise<T> {
  const text = await readLimitedText(c.req.raw, body.limit);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw badRequest("invalid json");
  }
  const parsed = body.schema.safeParse(value);
  if (!parsed.success) throw badRequest(body.expected);
  return parsed.data;
}

const tooLarge = () => PinboardError.of(413, "body too large");

async function readLimitedText(request: Request, limit: number): Promise<string> {
  const declared = request.headers.get("content-length");
  if (declared !== null && Number(declared) > limit) throw tooLarge();
  const bytes = await readCapped(request.body, limit);
  if (bytes === null) throw tooLarge();
  return new TextDecoder().decode(bytes);
}
