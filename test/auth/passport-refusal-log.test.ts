import { describe, expect, it } from "vitest";
import { mintCredential } from "../../src/auth/mint.ts";
import { until } from "../support/local-worker.ts";
import { TEST_PASSPORT_SECRET } from "../support/pinboard-app.ts";
import type { PinboardProcess } from "../support/pinboard-process.ts";
import { usePinboardProcess } from "../support/pinboard-process-fixture.ts";

/**
 * A refused credential answers exactly 401 {"error":"unauthorized"}, as before, while the real
 * Node entry at PINBOARD_LOG_LEVEL=debug logs why (expired, bad signature, wrong issuer or
 * audience, malformed, missing), never the token.
 */

let pb: PinboardProcess;
usePinboardProcess(
  { PINBOARD_LOG_LEVEL: "debug", PINBOARD_PASSPORT_ISSUER: "https://idp", PINBOARD_PASSPORT_AUDIENCE: "pinboard" },
  (f) => ({ pb } = f),
);

const pinboard = { namespaces: ["*"], allowedBackendHosts: ["*"] };
const mint = (o: Partial<Parameters<typeof mintCredential>[0]> = {}) =>
  mintCredential({
    secret: TEST_PASSPORT_SECRET,
    sub: "op",
    scopes: ["pinboard:operator"],
    pinboard,
    issuer: "https://idp",
    audience: "pinboard",
    ...o,
  });

describe("401 reasons", { timeout: 20_000 }, () => {
  it("are logged at debug level without the token; the answer stays 401 unauthorized", async () => {
    const cases: Array<[string, string | undefined, string]> = [
      ["missing", undefined, "missing"],
      ["malformed header", "Token abc", "malformed"],
      ["malformed jwt", "Bearer not.a.jwt", "malformed"],
      [
        "expired",
        `Bearer ${await mint({ nowSeconds: Math.floor(Date.now() / 1000) - 7200, ttlSeconds: 60 })}`,
        "expired",
      ],
      [
        "bad signature",
        `Bearer ${await mint({ secret: "another-secret-of-at-least-32-characters" })}`,
        "bad signature",
      ],
      ["wrong issuer", `Bearer ${await mint({ issuer: "https://elsewhere" })}`, "wrong issuer"],
      ["wrong audience", `Bearer ${await mint({ audience: "other" })}`, "wrong audience"],
    ];
    for (const [name, authorization, reason] of cases) {
      const before = pb.output().length;
      const res = await fetch(`${pb.url}/registry/workers`, { headers: authorization ? { authorization } : {} });
      expect({ name, status: res.status, body: await res.text() }).toEqual({
        name,
        status: 401,
        body: '{"error":"unauthorized"}',
      });
      const line = await until(
        () =>
          pb
            .output()
            .slice(before)
            .split("\n")
            .find((l) => l.includes('"passport: unauthorized"')) ?? null,
        10_000,
        10,
      );
      const logged = JSON.parse(line) as { level: string; reason: string };
      expect({ name, level: logged.level }).toEqual({ name, level: "debug" });
      expect(logged.reason.startsWith(reason), `${name}: ${logged.reason}`).toBe(true);
      const token = authorization?.split(" ")[1];
      if (token && token.length > 10) expect(pb.output()).not.toContain(token);
    }
    // A good credential still passes.
    const ok = await fetch(`${pb.url}/registry/health`, { headers: { authorization: `Bearer ${await mint()}` } });
    expect(ok.status).toBe(200);
  });
});
