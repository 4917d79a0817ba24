import { randomBytes } from "node:crypto";

/**
 * Registers a hand-written test worker through Pinboard's real registry, as a worker process
 * would: a fresh challenge goes into `challenges` (which the worker's /_pinned/challenge answers
 * from) and the register body names the worker's URL and secret. Answers the new sessionId.
 */
export async function registerOverHttp(options: {
  pinboardUrl: string;
  token: string;
  namespace: string;
  advertiseUrl: string;
  secret: string;
  challenges: Map<string, string>;
  clientPrefix: string;
}): Promise<string> {
  const challenge = randomBytes(8).toString("hex");
  options.challenges.set(challenge, `v-${challenge}`);
  const res = await fetch(`${options.pinboardUrl}/registry/register`, {
    method: "POST",
    headers: { authorization: `Bearer ${options.token}`, "content-type": "application/json" },
    body: JSON.stringify({
      clientId: `${options.clientPrefix}-${challenge}`,
      secret: options.secret,
      namespaces: [options.namespace],
      advertiseUrl: options.advertiseUrl,
      headroom: 100,
      draining: false,
      challenge,
      challengeValue: `v-${challenge}`,
    }),
  });
  const body = (await res.json()) as { sessionId?: string };
  if (res.status !== 200 || !body.sessionId)
    throw new Error(`register answered ${res.status}: ${JSON.stringify(body)}`);
  return body.sessionId;
}
