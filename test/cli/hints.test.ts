import { decodeJwt } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { badCredentials } from "../support/bad-credentials.ts";
import { type PinboardProcess, startPinboardProcess } from "../support/pinboard-process.ts";
import { startTestRedis, type TestRedis } from "../support/redis.ts";
import { type CliRun, spawnCli } from "./cli-process.ts";

/**
 * What the CLI says when a command fails: the server's error line exactly as sent, then "hint:"
 * lines with the cause and the fix (a URL without the base path, a credential Pinboard refuses,
 * one without the operator scope), and `pinboard health` on a node that loses Redis. A real
 * Pinboard process under the base path /ops and a real redis-server, stopped by the last test.
 */

const LEASE_MS = 3000;

let t: TestRedis, pb: PinboardProcess, origin: string, operatorToken: string;

beforeAll(async () => {
  t = await startTestRedis();
  pb = await startPinboardProcess({
    redis: t,
    env: { PINBOARD_BASE_PATH: "/ops", PINBOARD_LEASE_TTL_MS: String(LEASE_MS) },
  });
  origin = new URL(pb.url).origin;
  operatorToken = await pb.operatorCredential();
});
afterAll(async () => {
  await pb?.stop();
  await t?.stop().catch(() => {});
});

/** The CLI against this Pinboard with a full operator credential, unless `env` says otherwise. */
function cli(args: readonly string[], env: Record<string, string> = {}): Promise<CliRun> {
  return spawnCli(args, { env: { PINBOARD_URL: pb.url, PINBOARD_OPERATOR_TOKEN: operatorToken, ...env } });
}

const GET_ONE =
  "hint: get an operator credential for this Pinboard: its `npm start` writes it to .pinboard/dev.env " +
  "(`. .pinboard/dev.env` exports PINBOARD_OPERATOR_TOKEN); with PINBOARD_PASSPORT_SECRET set, mint one: " +
  `npx pinboard mint-credential --scope pinboard:operator --namespaces '*'\n`;
const REFUSED_401 =
  "pinboard: unauthorized (HTTP 401)\n" +
  "hint: Pinboard answers 401 to a credential that is missing, malformed, expired or signed with another key; ";

describe.concurrent("hints on refusals", { timeout: 120_000 }, () => {
  it("a 404 on an operator route names the URL and the base path to check", async () => {
    const [missing, extra] = await Promise.all([
      cli(["workers"], { PINBOARD_URL: origin }),
      cli(["health", "--url", `${pb.url}/ops`]),
    ]);
    // Outside the server's base path: the server's "not found".
    expect(missing).toEqual({
      code: 1,
      stdout: "",
      stderr:
        "pinboard: not found (HTTP 404)\n" +
        `hint: GET ${origin}/registry/workers is not a Pinboard operator route: ` +
        `the URL ${origin} (from PINBOARD_URL) probably misses the server's base path\n` +
        `hint: check PINBOARD_URL against the server's PINBOARD_BASE_PATH: with PINBOARD_BASE_PATH=/pb, use ${origin}/pb ` +
        "(with PINBOARD_ADMIN_PORT set, the operator routes are on the admin port)\n",
    });
    // /ops/ops/registry/health: inside the base path, read as the namespace /ops.
    expect(extra).toEqual({
      code: 1,
      stdout: "",
      stderr:
        "pinboard: unknown namespace (HTTP 404)\n" +
        `hint: GET ${origin}/ops/ops/registry/health is not a Pinboard operator route: ` +
        `the URL ${origin}/ops/ops (from --url) probably has a base path (/ops/ops) the server does not use, ` +
        "or not the one it uses\n" +
        `hint: check --url against the server's PINBOARD_BASE_PATH: without one, use ${origin}; ` +
        `with one, use ${origin} followed by it (with PINBOARD_ADMIN_PORT set, the operator routes are on the admin port)\n`,
    });
  });

  it("a 401 says why the credential was refused and how to get one", async () => {
    const bad = new Map((await badCredentials(["pinboard:operator"])).map((c) => [c.name, c.token]));
    const expired = bad.get("expired")!;
    const expiredAt = new Date(decodeJwt(expired).exp! * 1000).toISOString();
    const [otherKey, stale, notJwt] = await Promise.all([
      cli(["workers"], { PINBOARD_OPERATOR_TOKEN: bad.get("wrongly signed")! }),
      cli(["stats", "--token", expired]),
      cli(["health", "--token", `Bearer ${operatorToken}`]),
    ]);
    expect(otherKey).toEqual({
      code: 1,
      stdout: "",
      stderr:
        REFUSED_401 +
        "the one from PINBOARD_OPERATOR_TOKEN is a well-formed, unexpired JWT, so it is most likely signed with " +
        "another key than this Pinboard's (e.g. minted by another `npm start` or `npm run dev`, each with its own " +
        "development key) or meant for another issuer or audience\n" +
        GET_ONE,
    });
    expect(stale.code).toBe(1);
    expect(stale.stdout).toBe("");
    const ago = /expired (\d+)s ago/.exec(stale.stderr)?.[1] ?? "?";
    expect(Number(ago)).toBeGreaterThanOrEqual(120);
    expect(stale.stderr).toBe(`${REFUSED_401}the one from --token expired ${ago}s ago (at ${expiredAt})\n${GET_ONE}`);
    expect(notJwt).toEqual({
      code: 1,
      stdout: "",
      stderr:
        REFUSED_401 +
        'the one from --token is not a JWT (three dot-separated base64url parts, eyJ…): pass the token alone, without "Bearer "\n' +
        GET_ONE,
    });
  });

  it("a 403 forbidden names the scope the command needs and the ones the credential has", async () => {
    // /registry/health is an operator route too: a worker credential is refused.
    const run = await cli(["health"], { PINBOARD_OPERATOR_TOKEN: await pb.workerCredential() });
    expect(run).toEqual({
      code: 1,
      stdout: "",
      stderr:
        "pinboard: forbidden (HTTP 403)\n" +
        "hint: `pinboard health` needs the pinboard:operator scope; the credential from PINBOARD_OPERATOR_TOKEN has only pinboard:worker\n" +
        GET_ONE,
    });
  });
});

// Last: it stops this file's Redis.
describe.sequential("pinboard health and readiness", { timeout: 120_000 }, () => {
  it("on a ready node says ready and exits 0", async () => {
    const run = await cli(["health"]);
    expect(run).toMatchObject({ code: 0, stderr: "" });
    expect(run.stdout).toMatch(/^ready: +yes\nuptime: +\d+s\nconnections: +\d+\ncold start: +\S/);
    expect(run.stdout).not.toMatch(/cold start: +unknown/);
  });

  it("with Redis down says not ready and why, shows the cold start as unknown, and exits 1", async () => {
    await t.stopServer();
    // The node notices at its next license renewal (a third of a lease).
    const deadline = Date.now() + 30_000;
    while ((await fetch(`${pb.url}/readyz`)).status !== 503) {
      if (Date.now() > deadline) throw new Error("/readyz stayed 200 with Redis stopped");
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const [table, json] = await Promise.all([cli(["health"]), cli(["health", "--json"])]);
    const notReady =
      `pinboard: not ready: GET ${pb.url}/readyz answered 503\n` +
      "hint: this node cannot reach Redis, does not hold the fleet license (another configuration's " +
      "PINBOARD_SHARDS, PINBOARD_HOSTNAME_AWARE or PINBOARD_FLEET_EPOCH holds it), or is draining (shutting down)\n" +
      "hint: check that the server's Redis (REDIS_URL, REDIS_CLUSTER_NODES or UPSTASH_REDIS_REST_URL) answers, " +
      'and the server\'s log for "not serving the fleet" and its reason; the cold start is unknown until it is ready\n';

    expect(table).toMatchObject({ code: 1, stderr: notReady });
    expect(table.stdout).toMatch(
      /^ready: +no \(GET \/readyz answered 503\)\nuptime: +\d+s\nconnections: +\d+\ncold start: +unknown while the node is not ready\n/,
    );
    expect(table.stdout).not.toMatch(/left in the longest open window/);

    // --json prints the server's answer as it came (its full-lease quarantineMs included).
    expect(json).toMatchObject({ code: 1, stderr: notReady });
    expect(JSON.parse(json.stdout)).toMatchObject({ quarantineMs: LEASE_MS, uptimeMs: expect.any(Number) });
  });
});
