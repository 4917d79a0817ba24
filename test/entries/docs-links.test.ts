import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

/**
 * The README and docs/ speak of the repository only: every relative link resolves to a file of
 * the repository, every #anchor to a heading of its target, and nothing points outside it (a
 * clone has no ../shared).
 */

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const pages = [
  "README.md",
  ...readdirSync(join(ROOT, "docs"))
    .filter((f) => f.endsWith(".md"))
    .map((f) => `docs/${f}`),
];

/** GitHub's heading anchors: lower-cased, punctuation but `-` and `_` dropped, spaces to `-`. */
function anchors(markdown: string): Set<string> {
  const found = new Set<string>();
  let fenced = false;
  for (const line of markdown.split("\n")) {
    if (line.startsWith("```")) fenced = !fenced;
    const heading = fenced ? null : /^#{1,6}\s+(.*)$/.exec(line);
    if (!heading) continue;
    const slug = heading[1]!
      .trim()
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, "")
      .replace(/\s/g, "-");
    let unique = slug;
    for (let n = 1; found.has(unique); n++) unique = `${slug}-${n}`;
    found.add(unique);
  }
  return found;
}

function links(markdown: string): string[] {
  const out: string[] = [];
  const withoutCode = markdown.replace(/```[\s\S]*?```/g, "").replace(/`[^`\n]*`/g, "");
  for (const match of withoutCode.matchAll(/\]\(([^)\s]+)\)/g)) out.push(match[1]!);
  return out;
}

describe.each(pages)("%s", (page) => {
  const text = readFileSync(join(ROOT, page), "utf8");

  it("links only inside the repository, to files and headings that exist", () => {
    const broken: string[] = [];
    for (const link of links(text)) {
      if (/^[a-z]+:/i.test(link)) {
        if (!/^https?:\/\/(127\.0\.0\.1|localhost)[:/]/.test(link)) broken.push(`${link} (outside the repository)`);
        continue;
      }
      const [path = "", anchor] = link.split("#");
      const target = path === "" ? join(ROOT, page) : join(dirname(join(ROOT, page)), path);
      if (relative(ROOT, target).startsWith("..")) broken.push(`${link} (outside the repository)`);
      else if (!existsSync(target)) broken.push(`${link} (no such file)`);
      else if (anchor !== undefined && target.endsWith(".md") && !anchors(readFileSync(target, "utf8")).has(anchor))
        broken.push(`${link} (no such heading)`);
    }
    expect(broken).toEqual([]);
  });

  it("never points at ../shared", () => {
    expect(text).not.toMatch(/\.\.\/shared/);
  });
});

/** The test files under test/: `folder/name` for test/folder/name(.unit|.property).test.ts. */
const testNames = new Set(
  readdirSync(join(ROOT, "test"), { recursive: true, encoding: "utf8" })
    .filter((path) => path.endsWith(".test.ts"))
    .map((path) => path.replace(/(\.unit|\.property)?\.test\.ts$/, "")),
);
const testFolders = new Set(
  [...testNames].flatMap((name) =>
    name
      .split("/")
      .slice(0, -1)
      .map((_, i, parts) => parts.slice(0, i + 1).join("/")),
  ),
);

/** The `folder/name` references in the last column of a table ("tested by"), as written. */
function testReferences(markdown: string): string[] {
  return markdown
    .split("\n")
    .map((line) => line.trim())
    .filter((line) => line.startsWith("| ") && line.endsWith("|"))
    .map((line) => line.slice(0, -1).split(" | ").at(-1) ?? "")
    .flatMap((cell) => [...cell.matchAll(/`([a-z-]+(?:\/[a-z0-9-]+)*\/?)`/g)].map((m) => m[1]!))
    .filter((ref) => ref.includes("/"));
}

describe.each(["README.md", "docs/reliability.md"])("the tests %s names", (page) => {
  it("exist under test/ (a test file or a folder of them)", () => {
    const refs = testReferences(readFileSync(join(ROOT, page), "utf8"));
    expect(refs.length).toBeGreaterThan(20);
    const missing = refs.filter((ref) => !testNames.has(ref) && !testFolders.has(ref.replace(/\/$/, "")));
    expect(missing).toEqual([]);
  });
});
