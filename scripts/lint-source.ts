/**
 * npm run lint:source — checks of the source text that no behavioural test can make without
 * timing or a Redis that enforces more than Redis 7.0 does. The tests prove the behaviour
 * (test/auth/security.test.ts: the comparisons answer equality, hash both inputs, fold every digest
 * byte; test/redis/cluster.test.ts: every script runs strictly on a real cluster); this keeps the shape
 * that makes it hold for inputs and paths the tests do not reach:
 *
 *   1. secret comparisons: the session secret and the proxy secret go through constantTimeEqual,
 *      attestations and Passport HS256 through crypto.subtle.verify;
 *   2. the comparison helper hashes first and folds every byte of the digests, with no early exit
 *      (an early exit answers the same, only sooner: no test but a timing one could see it);
 *   3. nowhere in src is a secret compared with === or !==;
 *   4. every Lua script reaches Redis keys only through KEYS (or a helper's *_key parameter fed
 *      from KEYS): an undeclared key of the same slot would pass even a strict cluster.
 *
 * Exits 1 listing every violation, 0 when there is none.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { registeredScripts } from "../src/contract/lua-script.ts";
import "./lua/all-scripts.generated.ts";

const ROOT = fileURLToPath(new URL("../src/", import.meta.url));
const problems: string[] = [];

function source(file: string): string {
  try {
    return readFileSync(join(ROOT, file), "utf8");
  } catch {
    problems.push(`src/${file}: missing (moved? update scripts/lint-source.ts)`);
    return "";
  }
}

function allSources(dir = ROOT): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? allSources(path) : path.endsWith(".ts") ? [path] : [];
  });
}

function expectMatch(file: string, pattern: RegExp, what: string): void {
  const text = source(file);
  if (text && !pattern.test(text)) problems.push(`src/${file}: ${what} (expected ${pattern})`);
}

// 1. Which comparison each secret goes through.
expectMatch(
  "data-plane/caller.ts",
  /deps\.secrets\.open\(record\.sessionId, record\.secret\)[\s\S]*constantTimeEqual\(secret, registered\)/,
  "the caller's session secret is not compared, opened, with constantTimeEqual",
);
expectMatch(
  "pinned/attestation-guard.ts",
  /return constantTimeEqual\(given, this\.secret\)/,
  "the proxy secret is not compared with constantTimeEqual",
);
expectMatch(
  "contract/attestation.ts",
  /crypto\.subtle\.verify\(\s*"HMAC"/,
  "attestations are not verified with crypto.subtle.verify",
);
expectMatch(
  "pinned/node-hmac.ts",
  /timingSafeEqual\(signature, expected\)/,
  "the worker library's node:crypto attestation check does not compare with timingSafeEqual",
);
// Passport's HS256 goes through jose with a Web Crypto HMAC key (verify, never a string compare).
expectMatch("auth/passport.ts", /\[\s*"verify",?\s*\]/, "Passport's HMAC key is not a verify key");

// 2. The helper's shape: hash both, fold every byte, never leave the loop early.
for (const [file, name] of [["contract/constant-time.ts", "constantTimeEqual"]] as const) {
  const text = source(file);
  const start = text.indexOf(`export async function ${name}`);
  if (start < 0) {
    if (text) problems.push(`src/${file}: ${name} not found`);
    continue;
  }
  const body = text.slice(start);
  const fn = body.slice(0, body.indexOf("\n}\n") + 2);
  if (!/crypto\.subtle\.digest\("SHA-256"/.test(fn))
    problems.push(`src/${file}: ${name} does not hash with SHA-256 first`);
  if (!/diff \|= x\[i\]! \^ y\[i\]!/.test(fn))
    problems.push(`src/${file}: ${name} does not fold every byte (diff |= x[i]! ^ y[i]!)`);
  if (/return false|break;|===\s*y|x\[i\]\s*!==/.test(fn))
    problems.push(`src/${file}: ${name} may leave the comparison early`);
}

// 3. No secret on either side of a strict (in)equality, other than presence checks.
for (const file of allSources()) {
  readFileSync(file, "utf8")
    .split("\n")
    .forEach((line, i) => {
      if (
        /(secret\w*(\.\w+)*\s*[!=]==|[!=]==\s*[\w.]*secret)/i.test(line) &&
        !/[!=]==\s*(undefined|null|""|'')|(undefined|null)\s*[!=]==/.test(line)
      ) {
        problems.push(`src/${relative(ROOT, file)}:${i + 1}: a secret compared with === or !==: ${line.trim()}`);
      }
    });
}

// 4. Lua: redis.call's key argument is KEYS[…] or a *_key parameter, and helpers taking *_key
// parameters are called with such arguments only.
{
  const helpers = new Map<string, number[]>(); // helper → positions of its key parameters
  for (const { script } of registeredScripts()) {
    for (const m of script.matchAll(/local function (\w+)\(([^)]*)\)/g)) {
      const positions = m[2]!.split(",").flatMap((p, i) => (p.trim().endsWith("_key") ? [i] : []));
      if (positions.length) helpers.set(m[1]!, positions);
    }
  }
  const keyParams = /^(KEYS\[\w+\]|\w+_key)$/;
  for (const { name, script } of registeredScripts()) {
    for (const m of script.matchAll(/redis\.call\('(\w+)'(?:,\s*([^,)]+))?/g)) {
      if (m[1] === "TIME") continue;
      if (!keyParams.test(m[2]?.trim() ?? ""))
        problems.push(`lua ${name}: redis.call('${m[1]}', ${m[2]}) names a key outside KEYS`);
    }
    for (const [helper, positions] of helpers) {
      for (const m of script.matchAll(new RegExp(`(?<!function )\\b${helper}\\(([^)]*)\\)`, "g"))) {
        const args = m[1]!.split(",").map((a) => a.trim());
        for (const p of positions)
          if (!keyParams.test(args[p] ?? ""))
            problems.push(`lua ${name}: ${helper}(${m[1]}) passes a key outside KEYS`);
      }
    }
  }
  if (registeredScripts().length === 0)
    problems.push("no Lua script registered (scripts/lua/all-scripts.generated.ts empty?)");
}

if (problems.length) {
  console.error(`lint:source: ${problems.length} problem(s)\n${problems.map((p) => `  ${p}`).join("\n")}`);
  process.exit(1);
}
console.log(`lint:source: ok (secret comparisons, ${registeredScripts().length} Lua scripts)`);
