import { createHash } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { registeredScripts } from "../src/redis/script.ts";
import "../src/redis/scripts/index.ts";
import { startTestRedis, type TestRedis } from "./support/redis.ts";

let t: TestRedis;
beforeAll(async () => {
  t = await startTestRedis();
});
afterAll(() => t.stop());

describe("Lua script registry", () => {
  const scripts = registeredScripts();

  it("holds every script", () => {
    expect(scripts.map((s) => s.name).sort()).toMatchInlineSnapshot(`
      [
        "apply-drain",
        "clear-overwritten",
        "copy-ns-list",
        "deregister-session",
        "enqueue-message",
        "fleet-claim",
        "gc-bucket",
        "gc-fleet",
        "heartbeat-bucket",
        "heartbeat-session",
        "lookup-binding",
        "mark-ejected",
        "ns-list-snapshot",
        "page-in-placeholder",
        "read-spent",
        "record-failure",
        "record-success",
        "register-bucket",
        "register-session",
        "release-row",
        "resolve",
        "resurrection",
        "scan-orphans",
        "spend-sync-apply",
        "spend-sync-read",
        "sweeper-lease",
        "tag-row",
        "unmirror-bucket",
        "wake-progress",
        "wind-down-rows",
        "zrem-if-score",
      ]
    `);
  });

  for (const script of scripts) {
    it(`${script.name}: the committed SHA equals SCRIPT LOAD's`, async () => {
      expect(await t.redis.client.script("LOAD", script.script)).toBe(script.sha);
      expect(createHash("sha1").update(script.script).digest("hex")).toBe(script.sha);
    });

    it(`${script.name}: names each KEYS and ARGV entry in its header`, async () => {
      const { readFile } = await import("node:fs/promises");
      const source = await readFile(new URL(`../src/redis/scripts/${script.name}.ts`, import.meta.url), "utf8");
      const header = source.slice(0, source.indexOf("const LUA"));
      const usedKeys = new Set([...script.script.matchAll(/KEYS\[(\d+)\]/g)].map((m) => Number(m[1])));
      for (const k of usedKeys) expect(header).toMatch(new RegExp(`KEYS\\[(${k}|\\d+ …|[^\\]]*${k})`));
      if (/ARGV\[/.test(script.script)) expect(header).toContain("ARGV[1]");
    });
  }
});
