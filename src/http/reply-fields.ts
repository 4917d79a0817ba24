import { z } from "zod";

/** Field schemas the replies of several domains share (src/registry, src/operator, src/api). */

export const int = z.number().int();
export const nonNegInt = int.nonnegative();
/** A namespace as a reply names it: a slash, then no other slash. */
export const namespace = z.string().regex(/^\/[^/]+$/);
/** A URL a worker advertised. */
export const httpUrl = z.string().regex(/^https?:\/\/[^/]/);
