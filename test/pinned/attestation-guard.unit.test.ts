import { describe, expect, it } from "vitest";
import { type AttestationInput, CONTRACT_ACCEPTANCE, signAttestation } from "../../src/contract/attestation.ts";
import { AttestationGuard } from "../../src/pinned/attestation-guard.ts";
import { SeenAttestations } from "../../src/pinned/seen-attestations.ts";

/**
 * The guard alone, on a fixed clock: a call that carries Pinboard-Epoch is refused with an
 * attestation that has no epoch claim, bound (htm, htu) or not, with or without
 * requireBoundAttestation: the epoch is what fences the call, so a token that does not name it
 * cannot authorise it. The end-to-end form is attestation-guard.test.ts.
 */

const SECRET = "guard-unit-secret-0123456789abcdef";
const AUD = "sess-unit";
const NOW_MS = 1_800_000_000_000;
const TARGET = "/counter/c1/x?q=1";

function guard(requireBinding: boolean): AttestationGuard {
  return new AttestationGuard({
    secret: SECRET,
    audiences: () => [AUD],
    basePath: "",
    requireBinding,
    acceptance: CONTRACT_ACCEPTANCE,
    seen: new SeenAttestations(100),
    nowMs: () => NOW_MS,
  });
}

const token = (claims: Omit<AttestationInput, "aud">) =>
  signAttestation(SECRET, { aud: AUD, ...claims }, NOW_MS / 1000);

function request(attestation: string, epoch: string | null): Request {
  const headers: Record<string, string> = { "Pinboard-Attestation": attestation };
  if (epoch !== null) headers["Pinboard-Epoch"] = epoch;
  return new Request(`http://pinned.invalid${TARGET}`, { headers });
}

/** Whether the guard accepts the attestation with these claims on a GET of TARGET. */
async function accepts(requireBinding: boolean, claims: Omit<AttestationInput, "aud">, epoch: string | null) {
  return (await guard(requireBinding).verify(request(await token(claims), epoch))) !== null;
}

describe("an attestation without an epoch claim", () => {
  it("is refused on a call that carries Pinboard-Epoch, unbound or bound, strict or not", async () => {
    const epochless = [{}, { htm: "GET", htu: TARGET }];
    for (const requireBinding of [false, true]) {
      for (const claims of epochless) {
        expect({ requireBinding, claims, accepted: await accepts(requireBinding, claims, "7") }).toEqual({
          requireBinding,
          claims,
          accepted: false,
        });
      }
    }
  });

  it("is accepted on a call without Pinboard-Epoch; with the epoch claim the epoch call is served", async () => {
    // The controls: the refusals above are for the missing claim, not for the token or the target.
    expect(await accepts(false, {}, null)).toBe(true);
    expect(await accepts(false, { htm: "GET", htu: TARGET }, null)).toBe(true);
    expect(await accepts(true, { htm: "GET", htu: TARGET }, null)).toBe(true);
    expect(await accepts(false, { htm: "GET", htu: TARGET, epoch: "7" }, "7")).toBe(true);
    expect(await accepts(true, { htm: "GET", htu: TARGET, epoch: "7" }, "7")).toBe(true);
  });
});
