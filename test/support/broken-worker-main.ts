/**
 * A worker written against the worker contract by hand (node:http), with faults on purpose, for
 * `pinboard check-worker` to find. It registers with PINBOARD_URL, heartbeats every expiresInMs / 3
 * (registering again on 409 reregister) and answers the challenge probe as the contract says, with
 * one challenge for its whole life; it checks an attestation's signature,
 * aud and times, a malformed Pinboard-Epoch and the namespace. Its faults:
 *   - it never checks htm, htu, epoch or jti: a call with another's attestation, or the same one
 *     again, is served;
 *   - it keeps no epochs: a forward at a stale epoch is served (200);
 *   - its stats' headroom is a string;
 *   - it mounts neither _wake nor _alarm (its instances answer 404 to any other path);
 *   - it ignores its lease, drains and wind_down messages (never acks them).
 */
import { randomBytes } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { verifyAttestation } from "../../src/contract/attestation.ts";

const pinboardUrl = process.env.PINBOARD_URL!;
const token = process.env.PINBOARD_WORKER_TOKEN!;
const secret = randomBytes(24).toString("base64url");
const challenge = randomBytes(12).toString("base64url");
const challengeValue = randomBytes(12).toString("base64url");
const namespaces = ["/things"];
let sessionId = "";

function send(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify(body));
}

async function serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
  const url = new URL(req.url ?? "/", "http://worker");
  if (url.pathname === "/_pinned/challenge") {
    if (req.headers["pinboard-proxy-secret"] !== secret) return send(res, 403, { detail: "invalid proxy secret" });
    if (url.searchParams.get("challenge") !== challenge) return send(res, 404, { detail: "unknown challenge" });
    return send(res, 200, { value: challengeValue });
  }
  const attestation = req.headers["pinboard-attestation"];
  const claims = typeof attestation === "string" ? await verifyAttestation(attestation, secret, sessionId) : null;
  if (claims === null) return send(res, 403, { detail: "invalid attestation" });
  if (url.pathname === "/_pinned/stats") return send(res, 200, { headroom: "lots", instances: [] });
  const epoch = req.headers["pinboard-epoch"];
  if (typeof epoch !== "string" || !/^\d+$/.test(epoch)) return send(res, 400, { detail: "malformed placement epoch" });
  const match = /^(\/[^/]+)\/([^/]+)(\/.*)?$/.exec(url.pathname);
  if (!match || !namespaces.includes(match[1]!)) return send(res, 404, { detail: "unknown namespace" });
  if (match[3] !== "/check-worker") return send(res, 404, { error: "no such route" });
  send(res, 200, { served: true });
}

async function post(route: string, body: object): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(`${pinboardUrl}/registry/${route}`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

const server = createServer((req, res) => void serve(req, res));
await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
const advertiseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
const register = () =>
  post("register", {
    clientId: "broken-worker",
    secret,
    namespaces,
    advertiseUrl,
    headroom: 10,
    draining: false,
    challenge,
    challengeValue,
  });
const registered = await register();
sessionId = String(registered.body.sessionId);
const intervalMs = Math.floor(Number(registered.body.expiresInMs) / 3);
async function heartbeat(): Promise<void> {
  const answer = await post("heartbeat", { sessionId, headroom: 10, draining: false, challenge, challengeValue });
  if (answer.status === 409 && answer.body.reregister === true) sessionId = String((await register()).body.sessionId);
}
setInterval(() => void heartbeat().catch(() => {}), intervalMs);
console.log(`ready ${advertiseUrl}`);
// EXIT_AFTER_MS: crashes that long after registering (status 4), for the checker to report.
if (process.env.EXIT_AFTER_MS) setTimeout(() => process.exit(4), Number(process.env.EXIT_AFTER_MS));
