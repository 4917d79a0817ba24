/**
 * The known-bad patches of `npm run chaos -- --mutants`: each breaks one rule the campaign exists
 * to guard. A patch is a literal replacement that must match exactly once in today's source
 * (test/scripts/chaos-mutants.unit.test.ts keeps them applicable), so a refactor that moves the
 * code fails that test instead of silently turning a mutant into a no-op.
 */

export interface ChaosMutant {
  name: string;
  /** What the patch breaks, as the matrix in docs/reliability.md names it. */
  breaks: string;
  /** Repository-relative file the patch edits. */
  file: string;
  /** Literal replacements, each of a text found exactly once. */
  edits: ReadonlyArray<{ find: string; replace: string }>;
}

export const CHAOS_MUTANTS: readonly ChaosMutant[] = [
  {
    name: "lease-guard-2s",
    breaks: "the worker library trusts its lease 2 s too long",
    file: "src/pinned/lease.ts",
    edits: [
      {
        find: "this.validUntil = sentAt + this.ttlMs - marginMs(this.ttlMs);",
        replace: "this.validUntil = sentAt + this.ttlMs - marginMs(this.ttlMs) + 2000;",
      },
    ],
  },
  {
    name: "fence-le",
    breaks: "the fence compares with <= (refuses the owner's own epoch)",
    file: "src/pinned/lua/includes/fence.lua",
    edits: [{ find: "if c < 0 then return {0, stored} end", replace: "if c <= 0 then return {0, stored} end" }],
  },
  {
    name: "fence-leading-zeros",
    breaks: "the fence keeps an epoch's leading zeros (compares 0009 above 12)",
    file: "src/pinned/lua/includes/fence.lua",
    edits: [{ find: "local t = string.gsub(s, '^0+', '')", replace: "local t = s" }],
  },
  {
    name: "epoch-not-bumped",
    breaks: "a takeover keeps the dead owner's epoch instead of minting a higher one",
    file: "src/placement/lua/resolve-11.lua",
    edits: [
      {
        find: "local epoch = string.format('%.0f', math.max(now_us, prev + 1, floor + 1))",
        replace:
          "local epoch = (old and old.epoch ~= '' and old.epoch) or string.format('%.0f', math.max(now_us, prev + 1, floor + 1))",
      },
    ],
  },
  {
    name: "is-current-true",
    breaks: "ctx.isCurrent() always answers true",
    file: "src/pinned/live-instance.ts",
    edits: [{ find: 'return this.state !== "retired" && !this.deps.lapsed();', replace: "return true;" }],
  },
  {
    name: "served-log-async",
    breaks: "the workers' logs are written through an async stream (a kill -9 loses its last lines)",
    file: "scripts/chaos/sync-log.ts",
    edits: [
      {
        find: 'import { openSync, readFileSync, writeSync } from "node:fs";',
        replace: 'import { createWriteStream, readFileSync } from "node:fs";',
      },
      {
        find: '  const fd = openSync(path, "a");\n  return (entry) => writeLine(fd, entry);',
        replace:
          // biome-ignore lint/suspicious/noTemplateCurlyInString: source text of the patched file
          '  const stream = createWriteStream(path, { flags: "a" });\n  return (entry) => stream.write(`${JSON.stringify(entry)}\\n`);',
      },
      {
        // biome-ignore lint/suspicious/noTemplateCurlyInString: source text of the patched file
        find: "function writeLine(fd: number, entry: object): void {\n  writeSync(fd, `${JSON.stringify(entry)}\\n`);\n}",
        replace: "",
      },
    ],
  },
];

/** Applies `mutant` to `source` (the text of mutant.file); throws unless each edit's text is found exactly once. */
export function applyMutant(mutant: ChaosMutant, source: string): string {
  let text = source;
  for (const { find, replace } of mutant.edits) {
    const at = text.indexOf(find);
    if (at < 0) throw new Error(`mutant ${mutant.name}: pattern not found in ${mutant.file}`);
    if (text.indexOf(find, at + 1) >= 0)
      throw new Error(`mutant ${mutant.name}: pattern found more than once in ${mutant.file}`);
    text = text.slice(0, at) + replace + text.slice(at + find.length);
  }
  return text;
}
