import { z } from "zod";
import { bodySchema } from "../http/json-body.ts";

/** Body schemas of the operator routes. */

const seconds = z
  .number()
  .min(0)
  .max(10 * 365 * 24 * 3600)
  .nullable();

export const windDownBody = bodySchema(
  z.object({
    namespace: z.string().max(256),
    id: z.string().min(1).max(256).nullish(),
    deadline: seconds,
    env: z.string().max(253).nullish(),
  }),
);
export type WindDownBody = z.infer<typeof windDownBody.schema>;

export const drainBody = bodySchema(z.object({ clientId: z.string().min(1).max(256), deadline: seconds }));

export const undrainBody = bodySchema(z.object({ clientId: z.string().min(1).max(256) }));
