import type { Command, Globals, TokenSource, UrlSource } from "./args.ts";
import { type HttpError, REQUEST_TIMEOUT_MS, type UnreachableError } from "./client.ts";
import { readCredential } from "./credential.ts";

/**
 * The cause and the fix of a failed command, as "hint: …" lines printed under the server's own
 * error line (which stays exactly as the server sent it). Every HTTP command needs one scope:
 * the operator routes, /registry/health included, take pinboard:operator; sweep-now sends no
 * credential at all (it talks to Redis).
 */

export const OPERATOR_SCOPE = "pinboard:operator";

const GET_CREDENTIAL =
  "hint: get an operator credential for this Pinboard: its `npm start` writes it to .pinboard/dev.env " +
  "(`. .pinboard/dev.env` exports PINBOARD_OPERATOR_TOKEN); with PINBOARD_PASSPORT_SECRET set, mint one: " +
  `npx pinboard mint-credential --scope ${OPERATOR_SCOPE} --namespaces '*'`;

const DEFAULT_USED = " (neither is set: the CLI used its default)";

export interface FailureContext {
  command: Command;
  globals: Globals;
  /** Local clock in ms, to tell an expired credential. */
  now: number;
}

/** The hint lines for a refused request; none when the server's string says it all. */
export function explainHttpError(err: HttpError, ctx: FailureContext): string[] {
  // The CLI asks only for routes every Pinboard serves: a 404 means the URL leads elsewhere.
  if (err.status === 404) return basePathHints(err, ctx.globals);
  if (err.status === 401) return unauthorizedHints(ctx);
  if (err.status === 403 && err.error === "forbidden") return forbiddenHints(ctx);
  if (err.status === 403 && /^(namespace|env) not allowed: /.test(err.error)) {
    const flag = err.error.startsWith("env") ? "--envs" : "--namespaces";
    return [
      `hint: the credential's pinboard claim does not cover it: use one minted with ${flag} including it (or '*')`,
    ];
  }
  return [];
}

export function explainUnreachable(err: UnreachableError, globals: Globals): string[] {
  const check = `check ${urlSetting(globals.urlFrom)}${globals.urlFrom === "default" ? DEFAULT_USED : ""}`;
  if (err.reason === "no answer in time") {
    return [
      `hint: nothing at ${err.url} answered within ${REQUEST_TIMEOUT_MS / 1000}s: ` +
        `Pinboard may be overloaded, or the host drops connections; ${check}`,
    ];
  }
  return [
    `hint: Pinboard is not running at ${err.url}, or the host, port or URL is wrong: ` +
      `start it (\`npm start\` listens on http://127.0.0.1:8787 unless PORT or HOST say otherwise) or ${check}`,
  ];
}

/** What `pinboard health` prints on stderr when GET /readyz answers 503. */
export function notReadyLines(readyzUrl: string): string[] {
  return [
    `pinboard: not ready: GET ${readyzUrl} answered 503`,
    "hint: this node cannot reach Redis, does not hold the fleet license (another configuration's " +
      "PINBOARD_SHARDS, PINBOARD_HOSTNAME_AWARE or PINBOARD_FLEET_EPOCH holds it), or is draining (shutting down)",
    "hint: check that the server's Redis (REDIS_URL, REDIS_CLUSTER_NODES or UPSTASH_REDIS_REST_URL) answers, " +
      'and the server\'s log for "not serving the fleet" and its reason; the cold start is unknown until it is ready',
  ];
}

function basePathHints(err: HttpError, globals: Globals): string[] {
  const { origin, pathname } = new URL(globals.url);
  const basePath = pathname.replace(/\/+$/, "");
  const cause =
    basePath === ""
      ? "misses the server's base path"
      : `has a base path (${basePath}) the server does not use, or not the one it uses`;
  const fix =
    basePath === ""
      ? `with PINBOARD_BASE_PATH=/pb, use ${origin}/pb`
      : `without one, use ${origin}; with one, use ${origin} followed by it`;
  return [
    `hint: ${err.method} ${err.url} is not a Pinboard operator route: ` +
      `the URL ${globals.url} (from ${urlSource(globals.urlFrom)}) probably ${cause}`,
    `hint: check ${urlSetting(globals.urlFrom)} against the server's PINBOARD_BASE_PATH: ${fix} ` +
      "(with PINBOARD_ADMIN_PORT set, the operator routes are on the admin port)",
  ];
}

function unauthorizedHints({ globals, now }: FailureContext): string[] {
  const sent = `the one from ${tokenSource(globals.tokenFrom)}`;
  const reading = readCredential(globals.token ?? "", now);
  let cause: string;
  if (reading.kind === "not-a-jwt") {
    cause = `${sent} is not a JWT (three dot-separated base64url parts, eyJ…): pass the token alone, without "Bearer "`;
  } else if (reading.kind === "expired") {
    const ago = Math.max(1, Math.round((now - reading.expiredAt) / 1000));
    cause = `${sent} expired ${ago}s ago (at ${new Date(reading.expiredAt).toISOString()})`;
  } else {
    cause =
      `${sent} is a well-formed, unexpired JWT, so it is most likely signed with another key than this ` +
      "Pinboard's (e.g. minted by another `npm start` or `npm run dev`, each with its own development key) " +
      "or meant for another issuer or audience";
  }
  return [
    `hint: Pinboard answers 401 to a credential that is missing, malformed, expired or signed with another key; ${cause}`,
    GET_CREDENTIAL,
  ];
}

function forbiddenHints({ command, globals, now }: FailureContext): string[] {
  const sent = `the credential from ${tokenSource(globals.tokenFrom)}`;
  const needs = `\`pinboard ${command.name}\` needs the ${OPERATOR_SCOPE} scope`;
  const reading = readCredential(globals.token ?? "", now);
  if (reading.kind !== "readable") return [`hint: ${needs} and a well-formed pinboard claim`, GET_CREDENTIAL];
  if (!reading.scopes.includes(OPERATOR_SCOPE)) {
    const has = reading.scopes.length === 0 ? "no scope" : `only ${reading.scopes.join(", ")}`;
    return [`hint: ${needs}; ${sent} has ${has}`, GET_CREDENTIAL];
  }
  if (!reading.pinboardClaimValid) {
    return [
      `hint: ${sent} has the ${OPERATOR_SCOPE} scope, but its pinboard claim is missing or malformed ` +
        '(expected {"namespaces":["*" or "/ns", …], …})',
      GET_CREDENTIAL,
    ];
  }
  if (command.name === "drain" || command.name === "undrain") {
    return [
      `hint: ${needs}, which ${sent} has; so Pinboard refused the client: ` +
        `${JSON.stringify(command.clientId)} is unknown, or its workers are outside the credential's ` +
        "namespaces, hostnames or envs",
    ];
  }
  if (command.name === "wind-down") {
    return [
      `hint: ${needs}, which ${sent} has; so Pinboard refused the placement: ` +
        "its owner is outside the credential's namespaces, hostnames or envs",
    ];
  }
  return [`hint: ${needs} and a pinboard claim that covers what it reads`, GET_CREDENTIAL];
}

function urlSource(from: UrlSource | undefined): string {
  return from === "--url" || from === "PINBOARD_URL" ? from : "the default, as neither --url nor PINBOARD_URL is set";
}

function urlSetting(from: UrlSource | undefined): string {
  return from === "--url" || from === "PINBOARD_URL" ? from : "--url or PINBOARD_URL";
}

function tokenSource(from: TokenSource | undefined): string {
  return from ?? "PINBOARD_OPERATOR_TOKEN";
}
