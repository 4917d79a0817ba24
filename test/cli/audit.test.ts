import { userInfo } from "node:os";
import { describe, expect, it } from "vitest";
import { recordAudit } from "../../src/audit/trail.ts";
import { runCli } from "../../src/cli/main.ts";
import { localTime } from "../../src/cli/render-audit.ts";
import { AUDIT_SCAN_PER_REQUEST } from "../../src/operator/audit-read.ts";
import { newestOf, readTrail } from "../support/audit-trail.ts";
import type { ChallengeServer } from "../support/challenge-server.ts";
import { credential, TEST_PASSPORT_SECRET, type TestPinboard } from "../support/pinboard-app.ts";
import { redisTargetEnv, type TestRedis } from "../support/redis.ts";
import { registerBody, registerOk } from "../support/registration.ts";
import { useRegistryFixture } from "../support/registry-fixture.ts";

/**
 * `npx pinboard` and the audit trail, the CLI run in-process against a Pinboard app on a real
 * Redis: the actions it sends are recorded via cli with the credential's sub, `sweep-now` (no
 * credential: straight to Redis) as the local user, and `pinboard audit` lists the trail.
 */

let t: TestRedis, pb: TestPinboard, worker: ChallengeServer, token: string;
useRegistryFixture({}, (f) => ({ t, pb, worker, token } = f));

async function cli(args: string[], env: Record<string, string> = {}) {
  let stdout = "";
  let stderr = "";
  const code = await runCli(args, {
    env: {
      PINBOARD_URL: "http://pinboard.test",
      PINBOARD_OPERATOR_TOKEN: await credential("pinboard:operator", {}, { sub: "cli-operator" }),
      ...env,
    },
    now: () => Date.now(),
    stdout: (text) => void (stdout += text),
    stderr: (text) => void (stderr += text),
    fetch: (input, init) => Promise.resolve(pb.app.request(String(input), init)),
  });
  return { code, stdout, stderr };
}

describe("pinboard and the audit trail", () => {
  it("records the CLI's actions via cli with the credential's sub", async () => {
    const { sessionId } = await registerOk(
      pb,
      token,
      registerBody(worker, { clientId: "cli-client", namespaces: ["/cli"] }),
    );
    expect(await cli(["drain", "cli-client"])).toMatchObject({ code: 0, stderr: "" });
    expect(
      await newestOf(pb, await credential("pinboard:operator"), "drain", { clientId: "cli-client" }),
    ).toMatchObject({
      subject: "cli-operator",
      via: "cli",
      target: { sessionId, clientId: "cli-client", namespaces: ["/cli"] },
      detail: { deadline: null },
    });
  });

  it("sweep-now records a sweep as the local user, via cli, fleet-wide", async () => {
    const run = await cli(["sweep-now", "--json"], {
      ...redisTargetEnv(t),
      PINBOARD_PASSPORT_SECRET: TEST_PASSPORT_SECRET,
      PINBOARD_LOG_LEVEL: "silent",
    });
    expect(run.code).toBe(0);
    const report = JSON.parse(run.stdout) as Record<string, unknown>;
    const sweep = (await readTrail(pb, await credential("pinboard:operator"), "?type=sweep&limit=1")).entries[0];
    expect(sweep).toMatchObject({
      kind: "action",
      subject: `local:${userInfo().username}`,
      via: "cli",
      target: {},
      detail: { ...report, durationMs: expect.any(Number) },
    });
  });

  it("pinboard audit --json prints the answer as it came; without it, a table at local time", async () => {
    const operator = await credential("pinboard:operator", {}, { sub: "cli-operator" });
    const json = await cli(["audit", "--json", "--limit", "3"]);
    expect(json).toMatchObject({ code: 0, stderr: "" });
    expect(JSON.parse(json.stdout)).toEqual(await readTrail(pb, operator, "?limit=3"));

    const actions = await cli(["audit", "--kind", "action", "--limit", "1"]);
    expect(actions.code).toBe(0);
    const [header, row, note] = actions.stdout.trimEnd().split("\n");
    expect(header).toMatch(/^TIME +TYPE +BY +VIA +TARGET +DETAIL$/);
    const newest = (await readTrail(pb, operator, "?kind=action&limit=1")).entries[0]!;
    expect(row).toMatch(new RegExp(`^${localTime(newest.at)} +sweep +local:\\S+ +cli +fleet +ran=true `));
    expect(note).toMatch(/^\(older entries: pinboard audit --before \d+-\d+\)$/);

    const events = await cli(["audit", "--kind", "event"]);
    expect(events.stdout).toMatch(/worker\.registered +- +registry +client cli-client \(\/cli\)/);
    expect(events.stdout).not.toMatch(/ drain /);
  });

  it("follows the server's cursor to fill --limit for a narrow credential; --before goes on from a cursor", async () => {
    await registerOk(pb, token, registerBody(worker, { clientId: "seen-client", namespaces: ["/seen"] }));
    // Newer than it, more entries than one request looks at, none of them /seen's.
    for (let i = 0; i < 2 * AUDIT_SCAN_PER_REQUEST; i++) {
      await recordAudit(pb.deps, {
        kind: "action",
        type: "undrain",
        subject: "ops",
        via: "api",
        target: { sessionId: "s", clientId: "hidden", namespaces: ["/hidden"] },
        detail: { revoked: false },
      });
    }
    const narrow = { PINBOARD_OPERATOR_TOKEN: await credential("pinboard:operator", { namespaces: ["/seen"] }) };
    const run = await cli(["audit", "--json", "--limit", "1"], narrow);
    expect(run).toMatchObject({ code: 0, stderr: "" });
    const page = JSON.parse(run.stdout) as { entries: Array<{ id: string; target: unknown }>; cursor?: string };
    expect(page.entries.map((e) => e.target)).toEqual([
      { sessionId: expect.any(String), clientId: "seen-client", namespaces: ["/seen"] },
    ]);
    expect(page.cursor).toBe(page.entries[0]!.id);
    const older = await cli(["audit", "--json", "--before", page.cursor!], narrow);
    expect(JSON.parse(older.stdout)).toEqual({ entries: [] });

    expect(await cli(["audit", "--before", "latest"])).toEqual({
      code: 2,
      stdout: "",
      stderr:
        'pinboard: --before: expected an entry id (a page\'s cursor), got "latest"\nRun "pinboard audit --help" for usage.\n',
    });
  });

  it("refuses a bad --limit before any request", async () => {
    const run = await cli(["audit", "--limit", "0"]);
    expect(run).toEqual({
      code: 2,
      stdout: "",
      stderr:
        'pinboard: --limit: expected a number of entries from 1 to 500, got "0"\nRun "pinboard audit --help" for usage.\n',
    });
  });
});
