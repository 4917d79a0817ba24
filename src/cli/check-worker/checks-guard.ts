import {
  type CheckContext,
  detailText,
  INVALID_ATTESTATION,
  INVALID_PROXY_SECRET,
  isDetail,
  isServed,
  MALFORMED_EPOCH,
  SERVED_TEXT,
  STALE_EPOCH,
  UNKNOWN_CHALLENGE,
  UNKNOWN_NAMESPACE,
} from "./context.ts";
import type { AttestationKind } from "./worker-client.ts";

/**
 * The challenge route beyond the register and heartbeat probes (checks-registration.ts): an
 * unknown challenge, and a probe without the secret or with another one.
 */
export async function challengeChecks(ctx: CheckContext): Promise<void> {
  const group = "challenge";
  const path = (challenge: string) => `/_pinned/challenge?challenge=${encodeURIComponent(challenge)}`;
  const unknown = await ctx.client.call({
    method: "GET",
    target: path(`check-worker-unknown-${Date.now()}`),
    attestation: null,
    proxySecret: "own",
  });
  ctx.expect(
    group,
    "an unknown challenge is answered 404",
    unknown,
    isDetail(unknown, 404, UNKNOWN_CHALLENGE),
    detailText(404, UNKNOWN_CHALLENGE),
  );
  for (const [title, proxySecret] of [
    ["a probe without Pinboard-Proxy-Secret is refused", undefined],
    ["a probe with another secret is refused", "wrong"],
  ] as const) {
    const answer = await ctx.client.call({
      method: "GET",
      target: path("check-worker"),
      attestation: null,
      proxySecret,
    });
    ctx.expect(
      group,
      title,
      answer,
      isDetail(answer, 403, INVALID_PROXY_SECRET),
      detailText(403, INVALID_PROXY_SECRET),
    );
  }
}

/** Each way an attestation can be wrong, with what it breaks. */
const REFUSED_ATTESTATIONS: ReadonlyArray<[AttestationKind | null, string]> = [
  [null, "a forward without Pinboard-Attestation is refused"],
  ["bad-signature", "an attestation signed with another secret is refused"],
  ["alg-none", "an unsigned (alg none) attestation is refused"],
  ["wrong-aud", "an attestation for another session (aud) is refused"],
  ["wrong-htm", "an attestation naming another method (htm) is refused"],
  ["wrong-htu", "an attestation naming another target (htu) is refused"],
  ["encoded-htu", "an attestation naming the target percent-encoded otherwise (/a, /%61) is refused"],
  ["htu-without-query", "an attestation naming the target without its query is refused"],
  ["expired", "an expired attestation (exp + 30 s skew passed) is refused"],
  ["epoch-mismatch", "an attestation whose epoch claim is not Pinboard-Epoch is refused"],
  ["no-epoch-claim", "an attestation without an epoch claim on a call with Pinboard-Epoch is refused"],
];

/**
 * Every attestation refusal the contract names, on a forward, each answered 403
 * {"detail":"invalid attestation"}; then the genuine one is served, and the same token sent again
 * (its jti replayed) is refused.
 */
export async function attestationChecks(ctx: CheckContext): Promise<void> {
  const group = "attestation";
  const id = ctx.nextId();
  const epoch = ctx.nextEpoch();
  // With a query: htu names it too.
  const target = `${ctx.target(id)}?check=1`;
  for (const [kind, title] of REFUSED_ATTESTATIONS) {
    const answer = await ctx.client.call({ method: "GET", target, epoch, attestation: kind });
    ctx.expect(group, title, answer, isDetail(answer, 403, INVALID_ATTESTATION), detailText(403, INVALID_ATTESTATION));
  }
  const genuine = await ctx.client.call({ method: "GET", target, epoch, attestation: "valid" });
  if (!ctx.expect(group, "a forward attested as Pinboard does is served", genuine, isServed(genuine), SERVED_TEXT))
    return;
  const replay = await ctx.client.call({ method: "GET", target, epoch, attestation: { token: genuine.token! } });
  ctx.expect(
    group,
    "the same attestation sent again (jti replayed) is refused",
    replay,
    isDetail(replay, 403, INVALID_ATTESTATION),
    detailText(403, INVALID_ATTESTATION),
  );
}

/**
 * The epoch guard: a malformed Pinboard-Epoch, the stale-epoch answer (N, then N+1, then N again),
 * and a namespace the worker did not register.
 */
export async function epochChecks(ctx: CheckContext): Promise<void> {
  const malformed = await ctx.client.call({
    method: "GET",
    target: ctx.target(ctx.nextId()),
    epoch: "12x",
    // No binding claims: a bound one names the header's value, which no epoch claim can be.
    attestation: "unbound",
  });
  const refusedByBinding = isDetail(malformed, 403, INVALID_ATTESTATION);
  if (refusedByBinding) {
    ctx.pass(
      "epoch",
      "a malformed Pinboard-Epoch is refused",
      "403 invalid attestation: this worker requires bound attestations",
    );
  } else {
    const ok = malformed.kind === "answered" && malformed.status === 400 && malformed.text.includes(MALFORMED_EPOCH);
    ctx.expect("epoch", "a malformed Pinboard-Epoch is answered 400", malformed, ok, detailText(400, MALFORMED_EPOCH));
  }

  const id = ctx.nextId();
  const older = ctx.nextEpoch();
  const newer = `${BigInt(older) + 1n}`;
  const first = await ctx.client.call({ method: "GET", target: ctx.target(id), epoch: older, attestation: "valid" });
  const second = await ctx.client.call({ method: "GET", target: ctx.target(id), epoch: newer, attestation: "valid" });
  if (!isServed(first) || !isServed(second)) {
    ctx.expect(
      "epoch",
      "a forward at epoch N and then N+1 is served",
      isServed(first) ? second : first,
      false,
      SERVED_TEXT,
    );
  } else {
    const stale = await ctx.client.call({ method: "GET", target: ctx.target(id), epoch: older, attestation: "valid" });
    ctx.expect(
      "epoch",
      "a forward at epoch N after N+1 is answered 409",
      stale,
      isDetail(stale, 409, STALE_EPOCH),
      detailText(409, STALE_EPOCH),
    );
  }

  const ns = `/check-worker-unknown-${Date.now()}`;
  const unknown = await ctx.client.call({
    method: "GET",
    target: `${ns}/${ctx.nextId()}/check-worker`,
    epoch: ctx.nextEpoch(),
    attestation: "valid",
  });
  ctx.expect(
    "namespace",
    "a forward to a namespace the worker did not register is answered 404",
    unknown,
    isDetail(unknown, 404, UNKNOWN_NAMESPACE),
    detailText(404, UNKNOWN_NAMESPACE),
  );
}
