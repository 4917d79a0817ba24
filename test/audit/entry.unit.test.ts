import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { AUDIT_ENTRY_MAX_BYTES } from "../../src/audit/entry.ts";

/** The entry cap is enforced by the Lua that appends; the TypeScript constant states the same number. */
describe("AUDIT_ENTRY_MAX_BYTES", () => {
  it("is the cap the append script enforces", () => {
    const lua = readFileSync(new URL("../../src/redis/lua/includes/audit.lua", import.meta.url), "utf8");
    expect(lua).toContain(`local AUDIT_ENTRY_MAX_BYTES = ${AUDIT_ENTRY_MAX_BYTES}\n`);
    expect(AUDIT_ENTRY_MAX_BYTES).toBe(2048);
  });
});
