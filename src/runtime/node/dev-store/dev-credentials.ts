import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { mintCredential } from "../../../auth/mint.ts";
import type { Config } from "../../../config/config.ts";
import { createPrivateFile, privateDir, readPrivateFile, SymlinkRefusedError } from "./private-file.ts";

export interface DevPassport {
  secret: string;
  worker: string;
  operator: string;
  /** Where the key lives, relative to the working directory, and whether this start created it. */
  keyFile?: { path: string; created: boolean };
}

/** The development key's file, relative to the working directory (git-ignored). */
export const DEV_SECRET_FILE = join(".pinboard", "dev-passport-secret");

/**
 * The development key: read from `.pinboard/dev-passport-secret` in `dir` when an earlier start
 * wrote it, else a random one written there (directory 0700, file 0600), so credentials printed
 * by one `npm start` keep working after a restart. A key file that cannot be written (read-only
 * checkout) leaves a key for this run only.
 */
export interface DevSecret {
  secret: string;
  /** DEV_SECRET_FILE, or absent when the key could not be saved (then `error` says why). */
  path?: string;
  created: boolean;
  error?: string;
}

export async function loadOrCreateDevSecret(dir: string): Promise<DevSecret> {
  const path = join(dir, DEV_SECRET_FILE);
  let existing: string | undefined;
  try {
    existing = (await readPrivateFile(path))?.trim();
  } catch (err) {
    throw new Error(
      `cannot read the development key ${DEV_SECRET_FILE}: ${(err as Error).message} (delete it for a new key)`,
    );
  }
  if (existing !== undefined) {
    if (existing.length < 32) {
      throw new Error(
        `${DEV_SECRET_FILE} holds no usable key (expected at least 32 characters): ` +
          "delete it and start again for a new key",
      );
    }
    return { secret: existing, path: DEV_SECRET_FILE, created: false };
  }
  const secret = newDevSecret();
  let created: boolean;
  try {
    await privateDir(join(dir, ".pinboard"), dir);
    created = await createPrivateFile(path, `${secret}\n`);
  } catch (err) {
    if (err instanceof SymlinkRefusedError) throw err;
    return { secret, created: true, error: (err as Error).message };
  }
  // Another process wrote it between our read and write: use theirs.
  return created ? { secret, path: DEV_SECRET_FILE, created: true } : loadOrCreateDevSecret(dir);
}

/**
 * 32 random bytes as hex: a key pasted after `--secret` in a shell must not start with "-" (a
 * base64url key does once in 64, and the CLI then takes it for an option).
 */
function newDevSecret(): string {
  return randomBytes(32).toString("hex");
}

/**
 * With no passport key configured, local runs use the development key (see
 * loadOrCreateDevSecret; a random one when `dir` is not given) and mint one credential per role
 * (all namespaces, all backend hosts, 24 h), so `npm start` works with curl at once.
 */
export async function mintDevPassport(dir?: string): Promise<DevPassport & { keyFileError?: string }> {
  const loaded = dir === undefined ? undefined : await loadOrCreateDevSecret(dir);
  const secret = loaded?.secret ?? newDevSecret();
  const pinboard = { namespaces: ["*"], allowedBackendHosts: ["*"] };
  const ttlSeconds = 24 * 3600;
  return {
    secret,
    ...(loaded?.path !== undefined ? { keyFile: { path: loaded.path, created: loaded.created } } : {}),
    ...(loaded?.error !== undefined ? { keyFileError: loaded.error } : {}),
    worker: await mintCredential({ secret, sub: "dev-worker", scopes: ["pinboard:worker"], pinboard, ttlSeconds }),
    operator: await mintCredential({
      secret,
      sub: "dev-operator",
      scopes: ["pinboard:operator"],
      pinboard,
      ttlSeconds,
    }),
  };
}

/** Where the banner's commands find what it no longer prints, and whom they talk to. */
export interface DevBannerTargets {
  baseUrl: string;
  /** With PINBOARD_ADMIN_PORT: the registry's URL, for workers and operators. */
  adminUrl?: string;
  /** The dev env file (dev-env-file.ts) as the banner names it. */
  envFile: string;
  /** Whether the env file holds DURABLE_REDIS_URL, so that the banner shows how to start a worker. */
  durable: boolean;
}

/** What `. <envFile>` exports: the clients' URL, both credentials, and the workers' Redis. */
export function devEnvVars(dev: DevPassport, pinboardUrl: string, durableRedisUrl?: string): Record<string, string> {
  return {
    PINBOARD_URL: pinboardUrl,
    PINBOARD_WORKER_TOKEN: dev.worker,
    PINBOARD_OPERATOR_TOKEN: dev.operator,
    ...(durableRedisUrl !== undefined ? { DURABLE_REDIS_URL: durableRedisUrl } : {}),
  };
}

/**
 * What a local start prints: where the development key and credentials are (never the key or a
 * credential: stdout ends in service logs), and the commands that start the example worker and
 * call this Pinboard with them. With PINBOARD_ADMIN_PORT, workers and operators use `adminUrl`
 * (the registry lives there) and clients `baseUrl`.
 */
export function describeDevPassport(dev: DevPassport, targets: DevBannerTargets): string {
  const { baseUrl, envFile } = targets;
  const adminUrl = targets.adminUrl ?? baseUrl;
  const load = `. ${shellQuote(envFile)}`;
  return [
    ...describeDevKey(dev),
    `Credentials (pinboard:worker and pinboard:operator, all namespaces and hosts, 24 h)${
      targets.durable ? " and the workers' Redis URL" : ""
    } are in ${envFile} (mode 0600; not printed, so they stay out of logs). Load them with:`,
    `  ${load}`,
    ...(targets.durable
      ? ["Start a worker (in another terminal):", `  ${load} && CLIENT_ID=worker-a ${exampleWorkerCommand()}`]
      : [
          "Workers keep durable state in a Redis of their own, never in Pinboard's REDIS_URL (it holds every " +
            "session's secret): a Redis user limited to the durable store's keys (docs/operations.md, " +
            '"The workers\' Redis"), or PINBOARD_DURABLE_REDIS_URL.',
        ]),
    "Try:",
    `  curl -s ${baseUrl}/healthz`,
    `  curl -s -X POST ${baseUrl}/counter/demo/increment`,
    `  curl -s -H "Authorization: Bearer $PINBOARD_OPERATOR_TOKEN" ${adminUrl}/registry/health`,
  ].join("\n");
}

function describeDevKey(dev: DevPassport): string[] {
  const none = "No PINBOARD_PASSPORT_SECRET or PINBOARD_PASSPORT_JWKS:";
  if (dev.keyFile === undefined) return [`${none} minted a random development key (for this run only).`];
  const mint = `npx pinboard mint-credential --secret-file ${shellQuote(dev.keyFile.path)} --sub NAME --scope …`;
  return dev.keyFile.created
    ? [
        `${none} minted a development key and saved it in ${dev.keyFile.path}`,
        "(git-ignored; later starts reuse it, so these credentials survive a restart; " +
          `delete the file for a new key; mint more with ${mint}).`,
      ]
    : [
        `${none} using the development key from ${dev.keyFile.path}`,
        `(written by an earlier start; delete the file for a new key; mint more with ${mint}).`,
      ];
}

/**
 * The example worker in a clone (run from its root); where Pinboard was installed as a package,
 * the README's worker snippet saved as worker.mjs.
 */
function exampleWorkerCommand(): string {
  return existsSync(join("examples", "worker.ts"))
    ? "npx tsx examples/worker.ts"
    : "node worker.mjs  # README: Writing a worker";
}

/**
 * What a start with PINBOARD_PASSPORT_SECRET prints: how to mint credentials with that secret
 * (`pinboard mint-credential`, src/cli/mint-credential.ts). Nothing for a JWKS:
 * its credentials come from the identity provider.
 */
export function describeMinting(passport: { secret?: string; issuer?: string; audience?: string }): string | undefined {
  if (passport.secret === undefined) return undefined;
  const claims = [
    ...(passport.issuer !== undefined ? [`--issuer ${shellQuote(passport.issuer)}`] : []),
    ...(passport.audience !== undefined ? [`--audience ${shellQuote(passport.audience)}`] : []),
  ].join(" ");
  // The CLI reads PINBOARD_PASSPORT_SECRET itself: no secret on a command line that `ps` shows.
  const mint = (args: string) => `$(npx pinboard mint-credential ${args}${claims ? ` ${claims}` : ""})`;
  return [
    "Passport: HS256 with PINBOARD_PASSPORT_SECRET. " +
      "Mint credentials (in a shell where PINBOARD_PASSPORT_SECRET is set;",
    "narrow --namespaces and --hosts for real workers, `npx pinboard mint-credential --help` lists every flag):",
    `  export PINBOARD_WORKER_TOKEN=${mint("--sub worker-a --scope pinboard:worker --namespaces '*' --hosts '*'")}`,
    `  export PINBOARD_OPERATOR_TOKEN=${mint("--sub operator --scope pinboard:operator --namespaces '*'")}`,
  ].join("\n");
}

function shellQuote(value: string): string {
  return /^[A-Za-z0-9_./:@=+-]+$/.test(value) ? value : `'${value.replace(/'/g, "'\\''")}'`;
}

/**
 * The Redis a worker's durable state should use: PINBOARD_DURABLE_REDIS_URL (a Redis apart from
 * Pinboard's), else the dev store's workers' user. Never Pinboard's own REDIS_URL: it reaches every
 * session's secret and the audit trail (docs/operations.md, "The workers' Redis").
 */
export function durableRedisForWorkers(
  config: Config,
  embedded: { workerUrl: string } | undefined,
): string | undefined {
  return config.durable.redisUrl ?? embedded?.workerUrl;
}

/**
 * The warning for a development key served beyond this machine: anyone who reads the key file
 * (or a credential minted with it) is an operator of every namespace. Undefined on loopback.
 */
export function devKeyExposureWarning(host: string): string | undefined {
  if (/^(127\.\d+\.\d+\.\d+|::1|\[::1\]|localhost)$/i.test(host)) return undefined;
  return (
    `HOST=${host} serves other machines with the development key (${DEV_SECRET_FILE}), meant for one machine: ` +
    "set PINBOARD_PASSPORT_SECRET or PINBOARD_PASSPORT_JWKS before serving beyond loopback"
  );
}
