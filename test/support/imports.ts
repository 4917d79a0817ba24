import { existsSync, readFileSync } from "node:fs";
import { dirname, resolve } from "node:path";

/** Every module specifier a file imports or re-exports, type-only ones included. */
export function specifiers(text: string): string[] {
  const found: string[] = [];
  const pattern =
    /(?:^|[\s;])(?:import|export)\s[^"';]*?from\s*["']([^"']+)["']|(?:^|[\s;])import\s*["']([^"']+)["']|\bimport\(\s*["']([^"']+)["']\s*\)/g;
  for (const m of text.matchAll(pattern)) found.push((m[1] ?? m[2] ?? m[3])!);
  return found;
}

/**
 * The files a TypeScript file imports, directly or through others, by relative specifier (absolute
 * paths, the file itself included). Packages and `node:*` are left out.
 */
export function importClosure(entry: string): Set<string> {
  const seen = new Set<string>();
  const queue = [resolve(entry)];
  while (queue.length) {
    const path = queue.pop()!;
    if (seen.has(path)) continue;
    if (!existsSync(path)) throw new Error(`${path} is imported but does not exist`);
    seen.add(path);
    for (const s of specifiers(readFileSync(path, "utf8")))
      if (s.startsWith(".")) queue.push(resolve(dirname(path), s));
  }
  return seen;
}
