import type { z } from "zod";
import { editDistance } from "./edit-distance.ts";

/**
 * What a bad configuration is told: each bad variable named with what it expects (never a
 * secret's value), each unknown PINBOARD_* name with the setting it most likely meant.
 */

/** Variables whose values are never echoed back in an error message. */
const SECRET_VARIABLES = new Set([
  "PINBOARD_PASSPORT_SECRET",
  "UPSTASH_REDIS_REST_TOKEN",
  "REDIS_URL",
  "PINBOARD_DURABLE_REDIS_URL",
  "PINBOARD_PASSPORT_JWKS",
  "PINBOARD_SECRETS_KEY",
]);

/**
 * What each variable expects, in plain words: the message of an issue whose own text is zod's
 * (e.g. "Invalid input: expected record, received array") rather than one written here.
 */
const EXPECTED: Record<string, string> = {
  REDIS_CLUSTER_NODES: "expected host:port,host:port",
  PINBOARD_DATA_PLANE_RULES: 'expected JSON such as {"/threads": {"scopes": ["threads:write"]}, "*": {"scopes": []}}',
};

/**
 * One line per bad variable: `NAME: expected …, got "value"` (the value left out for secrets and
 * URLs that may carry a password). A variable with several issues is named once, by its first.
 */
export function describeIssues(issues: readonly z.core.$ZodIssue[], strings: Record<string, string>): string[] {
  const lines = new Map<string, string>();
  for (const issue of issues) {
    const name = String(issue.path[0] ?? "config");
    if (lines.has(name)) continue;
    const own = issue.message.startsWith("expected ");
    const nested =
      issue.path.length > 1 && name !== "REDIS_CLUSTER_NODES"
        ? ` (at ${issue.path.slice(1).map(String).join(".")})`
        : "";
    const expected = own
      ? `${issue.message}${nested}`
      : (EXPECTED[name] ?? `expected a valid value${nested}: ${issue.message}`);
    const value = strings[name];
    const got =
      value === undefined
        ? ""
        : SECRET_VARIABLES.has(name)
          ? schemeOf(value)
          : `, got ${JSON.stringify(value.length > 60 ? `${value.slice(0, 60)}…` : value)}`;
    lines.set(name, `${name}: ${expected}${got}`);
  }
  return [...lines.values()];
}

/** ", got an http:// URL" for a URL (nothing of its host or password), "" otherwise. */
function schemeOf(value: string): string {
  const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(value.trim())?.[1];
  return scheme === undefined ? "" : `, got ${JSON.stringify(`${scheme.toLowerCase()}://…`)}`;
}

/**
 * PINBOARD_* names that are not settings of the server but of its clients, which a shell that
 * runs both may hold: the CLI's URL and credential, and the worker credential `npm start` prints.
 */
const CLIENT_VARIABLES = new Set(["PINBOARD_URL", "PINBOARD_OPERATOR_TOKEN", "PINBOARD_WORKER_TOKEN"]);

/**
 * One line per unknown PINBOARD_* name in `env` (`known`: the settings' names), with the closest
 * known name when one is close.
 */
export function unknownVariables(env: Record<string, unknown>, known: readonly string[]): string[] {
  const names = new Set(known);
  return Object.keys(env)
    .filter((name) => name.startsWith("PINBOARD_") && !names.has(name) && !CLIENT_VARIABLES.has(name))
    .sort()
    .map((name) => {
      const guess = closestName(
        name,
        known.filter((k) => k.startsWith("PINBOARD_")),
      );
      const hint = guess ? `; did you mean ${guess}?` : " (the README's Configuration section lists them)";
      return `${name}: not a Pinboard setting${hint}`;
    });
}

/** The known name nearest to `name` by edit distance, when it is near enough to be a typo. */
function closestName(name: string, known: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const candidate of known) {
    const d = editDistance(name.slice("PINBOARD_".length), candidate.slice("PINBOARD_".length));
    if (d < bestDistance) [best, bestDistance] = [candidate, d];
  }
  const suffix = name.length - "PINBOARD_".length;
  return bestDistance <= Math.max(2, Math.floor(suffix / 3)) ? best : undefined;
}
