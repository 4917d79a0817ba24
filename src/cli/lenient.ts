import type { z } from "zod";

type Def = { type: string; [key: string]: unknown };

/**
 * The lenient form of a reply schema, for a client of the routes: every strict object drops the
 * fields it does not know instead of failing, so a newer server's reply still parses; the rest
 * (types, literals, lengths, refinements) stays as declared, so a reply that does not match is
 * still reported. One schema per reply, read strictly by the server's tests and leniently here.
 */
export function lenient<T extends z.ZodType>(schema: T): T {
  const def = schema._zod.def as unknown as Def;
  const rebuilt = (changes: Record<string, unknown>) => schema.clone({ ...def, ...changes } as never) as T;
  const each = (list: unknown) => (list as z.ZodType[]).map((s) => lenient(s));
  switch (def.type) {
    case "object": {
      const shape = Object.entries(def.shape as Record<string, z.ZodType>).map(([k, s]) => [k, lenient(s)]);
      const strict = (def.catchall as z.ZodType | undefined)?._zod.def.type === "never";
      return rebuilt({ shape: Object.fromEntries(shape), catchall: strict ? undefined : def.catchall });
    }
    case "array":
      return rebuilt({ element: lenient(def.element as z.ZodType) });
    case "optional":
    case "nullable":
      return rebuilt({ innerType: lenient(def.innerType as z.ZodType) });
    case "union":
      return rebuilt({ options: each(def.options) });
    case "record":
      return rebuilt({ valueType: lenient(def.valueType as z.ZodType) });
    default:
      return schema;
  }
}
