import { createHash } from "node:crypto";
import { readFile } from "node:fs/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type LuaScript, registeredScripts } from "../../src/contract/lua-script.ts";
import "../../src/redis/scripts/index.ts";
import "../../src/pinned/durability-scripts.ts";
import { startTestRedis, type TestRedis } from "../support/redis.ts";

let t: TestRedis;
beforeAll(async () => {
  t = await startTestRedis();
});
afterAll(() => t.stop());

/** The comment that documents a script: its file's head, or the block right above its definition. */
async function headerOf(script: LuaScript): Promise<string> {
  if (script.name.startsWith("durable-")) {
    const source = await readFile(new URL("../../src/pinned/durability-scripts.ts", import.meta.url), "utf8");
    const at = source.indexOf(`defineScript("${script.name}"`);
    return source.slice(source.lastIndexOf("/**", at), at);
  }
  const source = await readFile(new URL(`../../src/redis/scripts/${script.name}.ts`, import.meta.url), "utf8");
  return source.slice(0, source.indexOf("const LUA"));
}

describe("Lua script registry", () => {
  const scripts = registeredScripts();

  it("holds every script", () => {
    expect(scripts.map((s) => s.name).sort()).toMatchInlineSnapshot(`
      [
        "apply-drain",
        "clear-overwritten",
        "copy-ns-list",
        "deregister-session",
        "durable-activate",
        "durable-clear-alarm",
        "durable-delete",
        "durable-delete-all",
        "durable-list",
        "durable-put",
        "durable-set-alarm",
        "durable-unindex-alarm",
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
        "rebind-rows",
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
      const header = await headerOf(script);
      const usedKeys = new Set([...script.script.matchAll(/KEYS\[(\d+)\]/g)].map((m) => Number(m[1])));
      for (const k of usedKeys) expect(header).toMatch(new RegExp(`KEYS\\[(${k}|\\d+ …|[^\\]]*${k})`));
      if (/ARGV\[/.test(script.script)) expect(header).toContain("ARGV[1]");
    });
  }
});
