import { diagnoseProbeFailure, type SelfProbeTarget } from "./advertise-self-probe.ts";
import {
  backoffMs,
  CredentialError,
  type PinboardAnswer,
  type PinboardCallError,
  type PinboardClient,
} from "./pinboard-client.ts";
import { callFailure, failureFields } from "./register-diagnosis.ts";
import type { PinnedLogger } from "./types.ts";

const TRIES = 3;

/**
 * The registration loop's calls to Pinboard's /registry/* routes. A call that gets no answer
 * throws a PinboardCallError naming the URL, the cause and what to check (register-diagnosis.ts);
 * `failure` builds the same for an answer the caller refuses. Release and deregister get three
 * tries, each logged on one line.
 */
export class RegistryCalls {
  constructor(
    private readonly client: PinboardClient,
    private readonly log: PinnedLogger,
    private readonly random: () => number,
  ) {}

  url(route: string): string {
    return this.client.url(`/registry/${route}`);
  }

  /** POST /registry/{route}: any HTTP answer; throws when none came. */
  async post(route: string, body: unknown): Promise<PinboardAnswer> {
    try {
      return await this.client.post(`/registry/${route}`, body);
    } catch (err) {
      if (err instanceof CredentialError) {
        const message = `${route}: ${err.message} — it must return a Passport credential with the pinboard:worker scope`;
        throw new Error(message, { cause: err });
      }
      throw this.failure(route, null, err);
    }
  }

  /** The error for a call's answer (or none, because of `cause`): Pinboard's words, then what they likely mean. */
  failure(route: string, answer: PinboardAnswer | null, cause?: unknown, hint?: string): PinboardCallError {
    return callFailure({ route, url: this.url(route), pinboardUrl: this.client.pinboardUrl }, answer, cause, hint);
  }

  /** Register's probe of the advertise URL failed: what probing it from here finds. */
  probeFailureHint(target: Omit<SelfProbeTarget, "pinboardUrl">): Promise<string> {
    return diagnoseProbeFailure({ ...target, pinboardUrl: this.client.pinboardUrl });
  }

  /** Three tries for release and deregister: retried only when no answer or a 5xx came back. */
  async tries(route: string, body: unknown): Promise<PinboardAnswer | null> {
    for (let attempt = 0; attempt < TRIES; attempt++) {
      if (attempt > 0) await sleep(backoffMs(attempt - 1, 200, 2000, this.random));
      try {
        const answer = await this.post(route, body);
        if (answer.status === 200) return answer;
        this.log.warn(`${route} refused`, failureFields({ attempt: attempt + 1 }, this.failure(route, answer)));
        if (answer.status < 500) return null;
      } catch (err) {
        this.log.warn(`${route} failed`, failureFields({ attempt: attempt + 1 }, err));
      }
    }
    this.log.warn(`${route}: gave up after ${TRIES} tries`, { url: this.url(route) });
    return null;
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
