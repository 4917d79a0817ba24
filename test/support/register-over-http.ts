import { randomBytes } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";

/**
 * What a hand-written test worker needs to register through Pinboard's real registry, as a worker
 * process would: a proxy secret, the challenges its /_pinned/challenge answers, and the register
 * call that puts a fresh one among them.
 */
export class HttpRegistration {
  readonly secret = randomBytes(16).toString("hex");
  private readonly challenges = new Map<string, string>();

  /** `clientPrefix` starts every clientId registered. */
  constructor(private readonly clientPrefix: string) {}

  /** The value Pinboard's probe for `challenge` is answered with; undefined for an unknown challenge or another proxy secret. */
  answer(proxySecret: string | string[] | undefined, challenge: string | null): string | undefined {
    return proxySecret === this.secret ? this.challenges.get(challenge ?? "") : undefined;
  }

  /**
   * Answers GET /_pinned/challenge on a node:http worker: 200 {value}, or 404 {"detail":"unknown
   * challenge"}. False, with nothing written, for any other path.
   */
  answerHttp(url: URL, req: IncomingMessage, res: ServerResponse): boolean {
    if (url.pathname !== "/_pinned/challenge") return false;
    const value = this.answer(req.headers["pinboard-proxy-secret"], url.searchParams.get("challenge"));
    const [status, body] = value === undefined ? [404, { detail: "unknown challenge" }] : [200, { value }];
    res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body));
    return true;
  }

  /** Registers the worker at `advertiseUrl` for `namespace` with a fresh challenge; answers the new sessionId. */
  async register(pinboardUrl: string, token: string, namespace: string, advertiseUrl: string): Promise<string> {
    const challenge = randomBytes(8).toString("hex");
    this.challenges.set(challenge, `v-${challenge}`);
    const res = await fetch(`${pinboardUrl}/registry/register`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify({
        clientId: `${this.clientPrefix}-${challenge}`,
        secret: this.secret,
        namespaces: [namespace],
        advertiseUrl,
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
}
