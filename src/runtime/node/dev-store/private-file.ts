import { constants } from "node:fs";
import { lstat, mkdir, open } from "node:fs/promises";
import { dirname, relative, sep } from "node:path";

/**
 * Files of the dev state under `.pinboard/` (the store's port and owner, its passwords, the
 * development credentials): written and read without following a symbolic link, so a link planted
 * there (`.pinboard/redis/port -> ~/.bashrc`) is refused instead of being written through.
 */

export class SymlinkRefusedError extends Error {
  constructor(readonly path: string) {
    super(`refusing to use ${path}: it is a symbolic link (delete it; Pinboard writes its dev files itself)`);
    this.name = "SymlinkRefusedError";
  }
}

const NOFOLLOW = constants.O_NOFOLLOW;

function refusal(path: string, err: unknown): Error {
  // O_NOFOLLOW on a link is ELOOP (Linux) or EMLINK (FreeBSD).
  const code = (err as NodeJS.ErrnoException).code;
  return code === "ELOOP" || code === "EMLINK" ? new SymlinkRefusedError(path) : (err as Error);
}

/** Creates `dir` (and its parents, mode 0700) and refuses it when it, or a folder between it and `root`, is a link. */
export async function privateDir(dir: string, root?: string): Promise<void> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  for (let d = dir; d !== root; d = dirname(d)) {
    if ((await lstat(d)).isSymbolicLink()) throw new SymlinkRefusedError(d);
    if (root === undefined || dirname(d) === d) break;
  }
}

/** Replaces the contents of `path` (created with `mode`), never through a link. */
export async function writePrivateFile(path: string, text: string, mode = 0o600): Promise<void> {
  const flags = constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC | NOFOLLOW;
  const handle = await open(path, flags, mode).catch((err: unknown) => {
    throw refusal(path, err);
  });
  try {
    await handle.chmod(mode);
    await handle.writeFile(text);
  } finally {
    await handle.close();
  }
}

/** Creates `path` with `text` (mode 0600) only when nothing, not even a link, is there; false when something is. */
export async function createPrivateFile(path: string, text: string): Promise<boolean> {
  const flags = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | NOFOLLOW;
  let handle: Awaited<ReturnType<typeof open>>;
  try {
    handle = await open(path, flags, 0o600);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "EEXIST") return false;
    throw err;
  }
  try {
    await handle.chmod(0o600);
    await handle.writeFile(text);
  } finally {
    await handle.close();
  }
  return true;
}

/** The contents of `path`, never through a link; undefined when there is no file. */
export async function readPrivateFile(path: string): Promise<string | undefined> {
  let handle: Awaited<ReturnType<typeof open>>;
  try {
    handle = await open(path, constants.O_RDONLY | NOFOLLOW);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw refusal(path, err);
  }
  try {
    return await handle.readFile("utf8");
  } finally {
    await handle.close();
  }
}

/** A path under the working folder relative to it (as the banner shows it for `npm start`), any other absolute. */
export function shownPath(path: string): string {
  const cwd = process.cwd();
  return path.startsWith(cwd + sep) ? relative(cwd, path) : path;
}
