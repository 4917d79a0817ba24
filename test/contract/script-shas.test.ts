import { createHash } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { generatedFiles } from "../../scripts/lua/emit.ts";
import { readScripts } from "../../scripts/lua/sources.ts";
import { registeredScripts } from "../../src/contract/lua-script.ts";
import "../../scripts/lua/all-scripts.generated.ts";
import { readFile } from "node:fs/promises";
import { startTestRedis, type TestRedis } from "../support/redis.ts";

let t: TestRedis;
beforeAll(async () => {
  t = await startTestRedis();
});
afterAll(() => t.stop());

describe("Lua script registry", () => {
  const scripts = registeredScripts();
  const sources = new Map(readScripts().map((s) => [s.name, s]));

  it("holds every script", () => {
    expect(scripts.map((s) => s.name).sort()).toMatchInlineSnapshot(`
      [
        "append-audit",
        "apply-drain",
        "clear-overwritten",
        "copy-ns-list",
        "deregister-session",
        "durable-activate",
        "durable-clear-alarm",
        "durable-commit",
        "durable-delete",
        "durable-delete-all",
        "durable-list",
        "durable-put",
        "durable-set-alarm",
        "durable-unindex-alarm",
        "enqueue-message",
        "fenced-write",
        "fleet-claim",
        "gc-bucket",
        "gc-fleet",
        "heartbeat-bucket",
        "heartbeat-session",
        "lookup-binding",
        "mark-ejected",
        "ns-list-snapshot",
        "page-in-placeholder",
        "read-audit",
        "read-spent",
        "rebind-rows",
        "record-ejection",
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
        "spread-slice",
        "sweeper-lease",
        "tag-row",
        "unmirror-bucket",
        "wake-page",
        "wake-progress",
        "wind-down-rows",
        "zrem-if-score",
      ]
    `);
  });

  it("the generated modules are what npm run lua writes from the .lua files", async () => {
    for (const [path, text] of generatedFiles()) {
      const committed = await readFile(new URL(`../../${path}`, import.meta.url), "utf8").catch(() => "(missing)");
      expect(committed, `${path} is out of date: run npm run lua`).toBe(text);
    }
  });

  for (const script of scripts) {
    it(`${script.name}: the committed SHA equals SCRIPT LOAD's`, async () => {
      expect(await t.redis.client.script("LOAD", script.script)).toBe(script.sha);
      expect(createHash("sha1").update(script.script).digest("hex")).toBe(script.sha);
    });

    it(`${script.name}: runs its .lua file's text, whose header names each KEYS and ARGV entry`, () => {
      const source = sources.get(script.name);
      expect(source?.source).toBe(script.script);
      const named = (kind: "KEYS" | "ARGV", n: number) =>
        source!.keys
          .concat(source!.argv)
          .some((e) => e.kind === kind && (e.variadic ? n >= (e.index ?? 1) : e.index === n));
      for (const kind of ["KEYS", "ARGV"] as const) {
        for (const m of script.script.matchAll(new RegExp(`${kind}\\[(\\d+)\\]`, "g"))) {
          expect(named(kind, Number(m[1])), `${kind}[${m[1]}]`).toBe(true);
        }
      }
    });
  }
});
