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
