import { ATTESTATION_TTL_S, attestationTarget, signAttestation } from "../../contract/attestation.ts";
import { attestationId } from "../../contract/attestation-id.ts";
import { base64url } from "../../contract/base64url.ts";
import { ATTESTATION_HEADER, EPOCH_HEADER, PROXY_SECRET_HEADER, REFUSAL_HEADER } from "../../contract/header-names.ts";
import { shown } from "./report.ts";

/** What the checker knows of the worker from its register body (and the answer it gave). */
export interface WorkerIdentity {
  sessionId: string;
  secret: string;
  advertiseUrl: string;
  namespaces: string[];
  clientId: string;
  /** The challenge of the worker's last register or heartbeat. */
  challenge: string;
}

/**
 * The attestation a call carries: "valid" signs it as Pinboard does (aud the sessionId, htm, htu
 * and epoch naming the call); the other kinds each break one rule of the contract; a string is
 * sent as it is (a replay); null sends none.
 */
export type AttestationKind =
  | "valid"
  | "bad-signature"
  | "wrong-aud"
  | "wrong-htm"
  | "wrong-htu"
  | "encoded-htu"
  | "htu-without-query"
  | "expired"
  | "epoch-mismatch"
  | "no-epoch-claim"
  | "unbound"
  | "alg-none";

export interface WorkerCallSpec {
  method: "GET" | "POST";
  /** The target relative to the advertise URL, starting with "/": `/counter/c1/x?y=1`. */
  target: string;
  /** Pinboard-Epoch; absent when undefined. */
  epoch?: string;
  attestation: AttestationKind | { token: string } | null;
  /** Pinboard-Proxy-Secret: the worker's own, another, or none. */
  proxySecret?: "own" | "wrong";
}

/** What the worker answered, its body cut to BODY_CAP, or why there was no answer. */
export type Answer =
  | { kind: "answered"; status: number; refusal: string | null; text: string; json: unknown; token?: string }
  | { kind: "no answer"; reason: string; token?: string };

const BODY_CAP = 64 * 1024;
export const CALL_TIMEOUT_MS = 10_000;

export class WorkerClient {
  constructor(private readonly worker: () => WorkerIdentity) {}

  get identity(): WorkerIdentity {
    return this.worker();
  }

  url(target: string): string {
    return `${this.worker().advertiseUrl}${target}`;
  }

  async call(spec: WorkerCallSpec): Promise<Answer> {
    const worker = this.worker();
    const url = this.url(spec.target);
    const headers: Record<string, string> = { Accept: "application/json" };
    let token: string | undefined;
    if (spec.attestation !== null) {
      token =
        typeof spec.attestation === "string"
          ? await this.attestation(spec.attestation, spec, url)
          : spec.attestation.token;
      headers[ATTESTATION_HEADER] = token;
    }
    if (spec.epoch !== undefined) headers[EPOCH_HEADER] = spec.epoch;
    const sentSecret = proxySecretFor(spec.proxySecret, worker);
    if (sentSecret !== undefined) headers[PROXY_SECRET_HEADER] = sentSecret;
    try {
      const response = await fetch(url, {
        method: spec.method,
        headers,
        redirect: "manual",
        signal: AbortSignal.timeout(CALL_TIMEOUT_MS),
      });
      const text = await readText(response);
      return {
        kind: "answered",
        status: response.status,
        refusal: response.headers.get(REFUSAL_HEADER),
        text,
        json: parse(text),
        token,
      };
    } catch (err) {
      const cause = err instanceof Error && err.cause instanceof Error ? `: ${err.cause.message}` : "";
      return { kind: "no answer", reason: `${err instanceof Error ? err.message : String(err)}${cause}`, token };
    }
  }

  /** The token of `kind` for the call: Pinboard's own, or one with exactly one rule broken. */
  private attestation(kind: AttestationKind, spec: WorkerCallSpec, url: string): Promise<string> {
    const { sessionId, secret, advertiseUrl } = this.worker();
    const now = Date.now() / 1000;
    const htu = attestationTarget(url, advertiseUrl);
    const bound = { aud: sessionId, htm: spec.method, htu, epoch: spec.epoch };
    switch (kind) {
      case "valid":
        return signAttestation(secret, bound, now);
      case "bad-signature":
        return signAttestation(`${secret}-other`, bound, now);
      case "wrong-aud":
        return signAttestation(secret, { ...bound, aud: `${sessionId}-other` }, now);
      case "wrong-htm":
        return signAttestation(secret, { ...bound, htm: spec.method === "GET" ? "POST" : "GET" }, now);
      case "wrong-htu":
        return signAttestation(secret, { ...bound, htu: htu.replace(/(\?|$)/, "-other$1") }, now);
      case "encoded-htu":
        // The path's last letter percent-encoded: another target to a verifier (`/a` is not `/%61`).
        return signAttestation(
          secret,
          {
            ...bound,
            htu: htu.replace(/([a-z])(\?|$)/, (_, c: string, q: string) => `%${c.charCodeAt(0).toString(16)}${q}`),
          },
          now,
        );
      case "htu-without-query":
        return signAttestation(secret, { ...bound, htu: htu.split("?")[0]! }, now);
      case "expired":
        // Past exp plus the contract's 30 s of skew.
        return signAttestation(secret, bound, now - 2 * ATTESTATION_TTL_S - 5);
      case "epoch-mismatch":
        return signAttestation(secret, { ...bound, epoch: `${BigInt(spec.epoch ?? "0") + 1n}` }, now);
      case "no-epoch-claim":
        return signAttestation(secret, { ...bound, epoch: undefined }, now);
      case "unbound":
        return signAttestation(secret, { aud: sessionId }, now);
      case "alg-none":
        return Promise.resolve(unsignedToken(sessionId, spec.method, htu, spec.epoch, now));
    }
  }
}

/** The Pinboard-Proxy-Secret a call sends: the worker's own, another one, or none. */
function proxySecretFor(which: WorkerCallSpec["proxySecret"], worker: WorkerIdentity): string | undefined {
  switch (which) {
    case "own":
      return worker.secret;
    case "wrong":
      return `${worker.secret}-not`;
    default:
      return undefined;
  }
}

/** An `alg: none` token with every claim right and no signature. */
function unsignedToken(aud: string, htm: string, htu: string, epoch: string | undefined, now: number): string {
  const iat = Math.floor(now);
  const part = (value: object) => base64url(new TextEncoder().encode(JSON.stringify(value)));
  const claims = {
    aud,
    iat,
    exp: iat + ATTESTATION_TTL_S,
    jti: attestationId(),
    htm,
    htu,
    ...(epoch ? { epoch } : {}),
  };
  return `${part({ alg: "none", typ: "pinboard+jwt" })}.${part(claims)}.`;
}

/** The body as text, cut at BODY_CAP characters; the rest is never read. */
async function readText(response: Response): Promise<string> {
  if (response.body === null) return "";
  const decoder = new TextDecoder();
  let text = "";
  for await (const chunk of response.body) {
    text += decoder.decode(chunk, { stream: true });
    if (text.length >= BODY_CAP) break;
  }
  return text.slice(0, BODY_CAP);
}

function parse(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/** An answer for a report line: status, Pinned-Refusal when sent, and the body (escaped, cut). */
export function describeAnswer(answer: Answer): string {
  if (answer.kind === "no answer") return `no answer (${shown(answer.reason)})`;
  const refusal = answer.refusal === null ? "" : ` + Pinned-Refusal: ${shown(answer.refusal)}`;
  const body = answer.text === "" ? "(empty body)" : shown(answer.text);
  return `${answer.status}${refusal} ${body}`;
}
