import { afterAll, beforeAll } from "vitest";
import { type ChallengeServer, startChallengeServer } from "./challenge-server.ts";
import { credential, startTestPinboard, type TestPinboard } from "./pinboard-app.ts";
import { startTestRedis, type TestRedis } from "./redis.ts";

type Env = Record<string, string>;

export interface RegistryFixtureOptions {
  /** sub and account of the worker credential `token` (default: sub "tester", no account). */
  token?: { sub?: string; account?: string };
  /** More credentials by name, each minted from credential()'s arguments: `{ operator: ["pinboard:operator"] }`. */
  credentials?: Record<string, Parameters<typeof credential>>;
  /**
   * More Pinboards on the same Redis by name, each on its own env (with a PINBOARD_PREFIX of its
   * own, a fleet of its own): `{ aware: { PINBOARD_PREFIX: "aware:", PINBOARD_HOSTNAME_AWARE: "true" } }`.
   */
  pinboards?: Record<string, Env>;
  /** The challenge-answering worker: false for none, or the proxy secret it expects (default: one, default secret). */
  worker?: false | { secret: string };
}

export interface RegistryFixture<O extends RegistryFixtureOptions = Record<never, never>> {
  t: TestRedis;
  /** The Pinboard on `env`. */
  pb: TestPinboard;
  /** The `pinboards` option's Pinboards, by the same names. */
  pinboards: Record<keyof O["pinboards"], TestPinboard>;
  /** Undefined with `worker: false`. */
  worker: O["worker"] extends false ? undefined : ChallengeServer;
  /** A pinboard:worker credential for every namespace and backend host (see `token`). */
  token: string;
  /** The `credentials` option's credentials, by the same names. */
  credentials: Record<keyof O["credentials"], string>;
}

/** useRegistryFixture's options for a second Pinboard on the same Redis, hostname-aware on a prefix of its own: `pinboards.aware`. */
export const WITH_AWARE_PINBOARD = {
  pinboards: { aware: { PINBOARD_PREFIX: "aware:", PINBOARD_HOSTNAME_AWARE: "true" } },
} satisfies RegistryFixtureOptions;

/**
 * The usual setup of a registry test file: a private Redis, an in-process Pinboard on it built
 * with `env`, one challenge-answering worker and a worker credential, plus whatever `options`
 * adds; torn down after the file: the worker, then each Pinboard (in the order started), then
 * Redis. `ready` hands the parts to the file's own variables once they are up:
 *
 *     useRegistryFixture({ PINBOARD_LEASE_TTL_MS: "5000" }, (f) => ({ t, pb, worker, token } = f));
 *     useRegistryFixture({}, (f) => ({ pb, token, credentials: { operator } } = f), { credentials: { operator: ["pinboard:operator"] } });
 *
 * A beforeAll/afterAll of the file's own registered after this call runs after the setup and
 * before the teardown (vitest runs afterAll hooks in reverse order).
 */
export function useRegistryFixture<O extends RegistryFixtureOptions = Record<never, never>>(
  env: Env,
  ready: (f: RegistryFixture<O>) => void,
  options: O = {} as O,
): void {
  let t: TestRedis | undefined;
  let worker: ChallengeServer | undefined;
  const started: TestPinboard[] = [];
  beforeAll(async () => {
    t = await startTestRedis();
    const pb = await startTestPinboard(t, env);
    started.push(pb);
    const pinboards: Record<string, TestPinboard> = {};
    for (const [name, more] of Object.entries(options.pinboards ?? {}))
      started.push((pinboards[name] = await startTestPinboard(t, more)));
    if (options.worker !== false) worker = await startChallengeServer(options.worker?.secret);
    const token = await credential("pinboard:worker", {}, options.token);
    const credentials: Record<string, string> = {};
    for (const [name, args] of Object.entries(options.credentials ?? {})) credentials[name] = await credential(...args);
    ready({ t, pb, pinboards, worker, token, credentials } as RegistryFixture<O>);
  });
  afterAll(async () => {
    await worker?.close();
    for (const pb of started) await pb.close();
    await t?.stop();
  });
}

/**
 * useRegistryFixture with WITH_AWARE_PINBOARD, handing the hostname-aware Pinboard as `aware`:
 *
 *     useAwareRegistryFixture((f) => ({ t, pb, worker, token, aware } = f));
 */
export function useAwareRegistryFixture(
  ready: (f: RegistryFixture<typeof WITH_AWARE_PINBOARD> & { aware: TestPinboard }) => void,
): void {
  useRegistryFixture({}, (f) => ready({ ...f, aware: f.pinboards.aware }), WITH_AWARE_PINBOARD);
}
