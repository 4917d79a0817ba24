import { describe, expect, it } from "vitest";
import {
  activationFailed,
  detail,
  instanceOverloaded,
  internalError,
  invalidAttestation,
  invalidProxySecret,
  json,
  malformedEpoch,
  notFound,
  type RefusalReason,
  refusal,
  staleEpoch,
  storageWriteFailed,
  unknownNamespace,
} from "../../src/pinned/responses.ts";

/** The worker contract's fixed answers: status, `{"detail"}` body, JSON content type, and the refusal headers. */

async function read(res: Response) {
  return { status: res.status, headers: Object.fromEntries(res.headers), body: await res.json() };
}

describe("pinned's answers", () => {
  it("a JSON body with its content type and the headers given", async () => {
    expect(await read(json(201, { a: 1 }, { "x-one": "1" }))).toEqual({
      status: 201,
      headers: { "content-type": "application/json", "x-one": "1" },
      body: { a: 1 },
    });
    expect(await read(detail(418, "teapot"))).toEqual({
      status: 418,
      headers: { "content-type": "application/json" },
      body: { detail: "teapot" },
    });
  });

  it("the contract's fixed refusals, each its status and words", async () => {
    const fixed = await Promise.all(
      [
        invalidAttestation(),
        invalidProxySecret(),
        malformedEpoch(),
        staleEpoch(),
        unknownNamespace(),
        notFound(),
        internalError(),
        storageWriteFailed(),
      ].map(read),
    );
    expect(fixed.map(({ status, body }) => [status, body.detail])).toEqual([
      [403, "invalid attestation"],
      [403, "invalid proxy secret"],
      [400, "malformed placement epoch"],
      [409, "stale placement epoch"],
      [404, "unknown namespace"],
      [404, "not found"],
      [500, "internal error"],
      [500, "storage write failed"],
    ]);
    for (const { headers } of fixed) expect(headers).toEqual({ "content-type": "application/json" });
  });

  it("every refusal reason is 503 with Retry-After: 1 and Pinned-Refusal: lease-unhealthy, its detail saying why", async () => {
    const reasons: Record<RefusalReason, string> = {
      draining: "worker draining",
      "lease-unhealthy": "lease unhealthy",
      "lease-lapsed": "lease lapsed",
      capacity: "instance limit reached",
      "winding-down": "instance winding down",
      evicted: "instance evicted",
      "epoch-ended": "placement epoch ended here",
    };
    for (const [reason, words] of Object.entries(reasons)) {
      expect(await read(refusal(reason as RefusalReason))).toEqual({
        status: 503,
        headers: { "content-type": "application/json", "retry-after": "1", "pinned-refusal": "lease-unhealthy" },
        body: { detail: words },
      });
    }
  });

  it("a failed activation and a full queue are 503 with Retry-After but no refusal header: the placement stays", async () => {
    for (const [res, words] of [
      [activationFailed(), "activation failed"],
      [instanceOverloaded(), "instance overloaded"],
    ] as const) {
      expect(await read(res)).toEqual({
        status: 503,
        headers: { "content-type": "application/json", "retry-after": "1" },
        body: { detail: words },
      });
    }
  });
});
