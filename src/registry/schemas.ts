import { z } from "zod";
import { bodySchema, MiB } from "../http/json-body.ts";

/** Body schemas of the worker routes (shape only; the field rules of field-rules.ts run after them). */

const sessionId = z.string().min(1).max(256);
const epochDigits = z.string().regex(/^\d+$/).max(32);
const idString = z.string().min(1).max(256);

/**
 * The largest headroom Pinboard stores. Any finite number ≥ 0 is accepted (JSON's 1e999 parses
 * as Infinity and is refused with the schema's 400); what is stored, in the record and the
 * namespace lists whose running headroom totals drive affinity's balance check, is clamped to
 * 0 … MAX_HEADROOM, so one worker's absurd value cannot swamp the total its co-tenants share.
 */
export const MAX_HEADROOM = 1_000_000;
const headroom = z
  .number()
  .min(0)
  .transform((value) => Math.min(value, MAX_HEADROOM));

/**
 * At most this many namespaces in one register (a longer list is the schema's 400 `expected
 * {...}`). Every bucket mirror of the record names three keys per namespace, and the record
 * travels with each; 256 keeps the largest such script call (253-character hostname, 128-character
 * namespaces, an env per namespace) near 450 KB, under the REST adapter's 900,000-byte request
 * budget (docs/operations.md).
 */
export const MAX_REGISTER_NAMESPACES = 256;

export const registerBody = bodySchema(
  z.object({
    clientId: z.string().min(1).max(256),
    secret: z.string().min(1).max(1024),
    namespaces: z.array(z.string()).min(1).max(MAX_REGISTER_NAMESPACES),
    advertiseUrl: z.string().min(1).max(2048),
    headroom,
    draining: z.boolean(),
    challenge: z.string().min(1).max(1024),
    challengeValue: z.string().min(1).max(1024),
    hostname: z.string().max(253).nullish(),
    env: z.string().max(253).nullish(),
    envs: z.record(z.string(), z.string().max(253)).nullish(),
    takeover: z.enum(["wind_down", "deny"]).nullish(),
    epoch: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER).nullish(),
    // How many ids in all is a field rule (MAX_REGISTER_INSTANCES), with its own 400.
    instances: z.record(z.string(), z.array(idString)).nullish(),
    prevSessionId: sessionId.nullish(),
  }),
  8 * MiB,
);
export type RegisterBody = z.infer<typeof registerBody.schema>;

export const heartbeatBody = bodySchema(
  z.object({
    sessionId,
    headroom,
    draining: z.boolean(),
    challenge: z.string().min(1).max(1024),
    challengeValue: z.string().min(1).max(1024),
    acks: z
      .array(z.union([z.string().max(32), z.number().int().min(0)]))
      .max(10_000)
      .nullish(),
  }),
);
export type HeartbeatBody = z.infer<typeof heartbeatBody.schema>;

export const releaseBody = bodySchema(
  z
    .array(
      z.object({
        sessionId,
        namespace: z.string().max(256),
        id: idString,
        epoch: z.union([epochDigits, z.literal("")]).nullish(),
      }),
    )
    .min(1)
    .max(10_000),
);
export type ReleaseBody = z.infer<typeof releaseBody.schema>;

export const tagBody = bodySchema(
  z.object({
    sessionId,
    namespace: z.string().max(256),
    id: idString,
    epoch: epochDigits,
    tag: z.string().min(1).max(256),
  }),
);
export type TagBody = z.infer<typeof tagBody.schema>;

export const deregisterBody = bodySchema(z.object({ sessionId }));
