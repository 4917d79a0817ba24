import { createHash, randomBytes } from "node:crypto";
import { join } from "node:path";
import { createPrivateFile, readPrivateFile } from "./private-file.ts";

/**
 * The dev store's two Redis users. `default` is Pinboard's (every key, every command). `pinned` is
 * the workers': exactly what the worker library's RedisDurabilityStore sends (src/pinned/
 * redis-durability.ts and the commands its Lua scripts call, which Redis 7 checks too), on the
 * durable store's keys only, so a worker given DURABLE_REDIS_URL reads no session secret of
 * Pinboard's and writes no audit entry. docs/operations.md ("The workers' Redis") prints the same
 * lines for a production Redis.
 */

export const WORKER_USER = "pinned";

/**
 * The commands of the durability store: EVALSHA with EVAL on NOSCRIPT; inside its scripts HGET,
 * HSET, HDEL, HMGET, DEL, ZADD, ZREM, ZSCORE, Z(REV)RANGEBYLEX; outside them HSET, HSETNX, HGET,
 * HMGET, ZADD, ZREM; PING (the idle check) and INFO (ioredis's ready check, which only warns
 * without it).
 */
export const WORKER_COMMANDS = [
  "evalsha",
  "eval",
  "hget",
  "hmget",
  "hset",
  "hsetnx",
  "hdel",
  "del",
  "zadd",
  "zrem",
  "zscore",
  "zrangebylex",
  "zrevrangebylex",
  "ping",
  "info",
] as const;

/** What ioredis's Cluster client asks besides (docs/operations.md: add these on a Redis Cluster). */
export const WORKER_CLUSTER_COMMANDS = ["cluster|slots", "cluster|info"] as const;

/** Where the persisted store keeps its users' passwords (0600, beside its data). */
export const PASSWORD_FILES = { admin: "default.password", worker: `${WORKER_USER}.password` } as const;

export interface DevStoreUsers {
  admin: string;
  worker: string;
}

/** A key pattern of ACL's glob syntax that matches exactly the keys starting with `prefix`. */
export function keyPattern(prefix: string): string {
  return `${prefix.replace(/[\\*?[\]]/g, (c) => `\\${c}`)}*`;
}

/** The ACL rules of the workers' user, without its password (`>…` or `#sha256`). */
export function workerAclRules(durablePrefix: string): string {
  const commands = WORKER_COMMANDS.map((c) => `+${c}`).join(" ");
  return `resetkeys ~${keyPattern(durablePrefix)} resetchannels -@all ${commands}`;
}

/** redis-server configuration (read from its stdin, so no password is on its command line) declaring both users. */
export function aclConfig(users: DevStoreUsers, durablePrefix: string): string {
  return [
    `user default on #${sha256(users.admin)} ~* &* +@all`,
    `user ${WORKER_USER} on #${sha256(users.worker)} ${workerAclRules(durablePrefix)}`,
    "",
  ].join("\n");
}

function sha256(text: string): string {
  return createHash("sha256").update(text).digest("hex");
}

function newPassword(): string {
  return randomBytes(24).toString("hex");
}

/** Fresh passwords for a store kept in memory only. */
export function newUsers(): DevStoreUsers {
  return { admin: newPassword(), worker: newPassword() };
}

/**
 * The passwords of the store in `dataDir`, created (0600, never through a link) by the first start
 * that needs them: a store made by a version without passwords gets them on its next start.
 */
export async function loadOrCreateUsers(dataDir: string): Promise<DevStoreUsers> {
  return {
    admin: await loadOrCreatePassword(join(dataDir, PASSWORD_FILES.admin)),
    worker: await loadOrCreatePassword(join(dataDir, PASSWORD_FILES.worker)),
  };
}

async function loadOrCreatePassword(path: string): Promise<string> {
  const existing = (await readPrivateFile(path))?.trim();
  if (existing !== undefined && /^[0-9a-f]{32,}$/.test(existing)) return existing;
  if (existing !== undefined)
    throw new Error(`${path} holds no usable password (expected hex digits): delete it and start again`);
  const password = newPassword();
  if (await createPrivateFile(path, `${password}\n`)) return password;
  // Another start wrote it between the read and the create: use theirs.
  return loadOrCreatePassword(path);
}

/** A redis:// URL of the store for `user` (the default user's names no user). */
export function storeUrl(port: number, password: string, user?: string): string {
  return `redis://${user ?? ""}:${password}@127.0.0.1:${port}`;
}
