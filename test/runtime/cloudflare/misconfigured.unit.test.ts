import { describe, expect, it, vi } from "vitest";
import worker from "../../../src/cloudflare.ts";

/**
 * Plain `npx wrangler dev` (no `npm run dev`) gives the Worker no Redis: every route answers 500
 * {"error":"misconfigured"} exactly as before, and the log line says what to do.
 */
describe("the Workers entry without its Redis variables", () => {
  it("answers misconfigured and logs: run `npm run dev`, or set UPSTASH_REDIS_REST_URL / UPSTASH_REDIS_REST_TOKEN", async () => {
    const logged: string[] = [];
    const spy = vi
      .spyOn(console, "error")
      .mockImplementation((...args: unknown[]) => void logged.push(args.map(String).join(" ")));
    try {
      const ctx = { waitUntil() {}, passThroughOnException() {} } as never;
      const res = await worker.fetch(
        new Request("http://pinboard.test/healthz"),
        { PINBOARD_PASSPORT_SECRET: "x".repeat(32) },
        ctx,
      );
      expect(res.status).toBe(500);
      expect(await res.text()).toBe('{"error":"misconfigured"}');
      expect(logged.join("\n")).toContain("run `npm run dev`");
      expect(logged.join("\n")).toContain("set UPSTASH_REDIS_REST_URL / UPSTASH_REDIS_REST_TOKEN");

      logged.length = 0;
      const noKey = await worker.fetch(
        new Request("http://pinboard.test/healthz"),
        { UPSTASH_REDIS_REST_URL: "http://127.0.0.1:1", UPSTASH_REDIS_REST_TOKEN: "t" },
        ctx,
      );
      expect(await noKey.text()).toBe('{"error":"misconfigured"}');
      expect(logged.join("\n")).toMatch(/PINBOARD_PASSPORT_SECRET: .*npm run dev/);

      // A JWKS shares no secret to seal worker secrets under: PINBOARD_SECRETS_KEY is required.
      logged.length = 0;
      const jwks = await worker.fetch(
        new Request("http://pinboard.test/healthz"),
        {
          UPSTASH_REDIS_REST_URL: "http://127.0.0.1:1",
          UPSTASH_REDIS_REST_TOKEN: "t",
          PINBOARD_PASSPORT_JWKS: '{"keys":[]}',
        },
        ctx,
      );
      expect(await jwks.text()).toBe('{"error":"misconfigured"}');
      expect(logged).toEqual([
        "invalid configuration:\n  PINBOARD_SECRETS_KEY: required with PINBOARD_PASSPORT_JWKS (at least 32 characters): " +
          "worker secrets are encrypted at rest under a key derived from it",
      ]);
    } finally {
      spy.mockRestore();
    }
  });
});
