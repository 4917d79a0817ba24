import type { ChallengeServer } from "./challenge-server.ts";
import type { TestPinboard } from "./pinboard-app.ts";
import { endColdStart, type TestRedis } from "./redis.ts";

let counter = 0;

/** A register body for a challenge server, with a fresh challenge it will answer. */
export function registerBody(
  worker: ChallengeServer,
  overrides: Record<string, unknown> = {},
): Record<string, unknown> {
  const challenge = `c-${++counter}-${Math.random().toString(36).slice(2)}`;
  const challengeValue = `v-${counter}`;
  worker.challenges.set(challenge, challengeValue);
  return {
    clientId: `client-${counter}`,
    secret: worker.secret,
    namespaces: ["/threads"],
    advertiseUrl: worker.url,
    headroom: 100,
    draining: false,
    challenge,
    challengeValue,
    ...overrides,
  };
}

/** Teaches `elsewhere` the body's challenge too, so that a probe which followed a redirect there would pass. */
export function answerElsewhere(elsewhere: ChallengeServer, body: Record<string, unknown>): void {
  elsewhere.challenges.set(body.challenge as string, body.challengeValue as string);
}

/** Sets `worker` to redirect its probes to `elsewhere`, and a register body for it whose challenge `elsewhere` answers too. */
export function registerBodyRedirectedTo(
  worker: ChallengeServer,
  elsewhere: ChallengeServer,
  overrides: Record<string, unknown> = {},
): Record<string, unknown> {
  worker.mode = "redirect";
  worker.redirectTo = elsewhere.url;
  const body = registerBody(worker, overrides);
  answerElsewhere(elsewhere, body);
  return body;
}

/** A heartbeat body that the worker will answer. */
export function heartbeatBody(
  worker: ChallengeServer,
  sessionId: string,
  overrides: Record<string, unknown> = {},
): Record<string, unknown> {
  const challenge = `h-${++counter}`;
  worker.challenges.set(challenge, `hv-${counter}`);
  return { sessionId, headroom: 50, draining: false, challenge, challengeValue: `hv-${counter}`, ...overrides };
}

export async function registerOk(
  pb: TestPinboard,
  token: string,
  body: Record<string, unknown>,
): Promise<{
  sessionId: string;
  expiresInMs: number;
  draining: boolean;
  duplicates?: Array<{ ns: string; id: string }>;
}> {
  const res = await pb.call("POST", "/registry/register", { token, body });
  const json = (await res.json()) as Record<string, unknown>;
  if (res.status !== 200) throw new Error(`register answered ${res.status}: ${JSON.stringify(json)}`);
  return json as never;
}

/** Registers a fresh client of `worker` (registerBody with `overrides`) once every bucket's cold start is over; its session id. */
export async function registerWarm(
  t: TestRedis,
  pb: TestPinboard,
  token: string,
  worker: ChallengeServer,
  overrides: Record<string, unknown>,
): Promise<string> {
  await endColdStart(t, pb.deps.keys);
  return (await registerOk(pb, token, registerBody(worker, overrides))).sessionId;
}
