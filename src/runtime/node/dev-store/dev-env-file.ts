import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { type DevPassport, describeDevPassport, devEnvVars } from "./dev-credentials.ts";
import { privateDir, SymlinkRefusedError, shownPath, writePrivateFile } from "./private-file.ts";

/**
 * Where a local start leaves what the banner used to print (the development credentials and the
 * workers' Redis URL): a shell file, mode 0600, that `. .pinboard/dev.env` exports. The banner
 * goes to stdout, which a service manager keeps in its logs; this file stays on the machine.
 */
export const DEV_ENV_FILE = join(".pinboard", "dev.env");

export interface DevEnvFile {
  /** As the banner names it: relative to the working folder when under it. */
  shown: string;
  /** Removes the file when it was a temporary one (no dev folder, or one that cannot be written). */
  remove(): Promise<void>;
}

/** `NAME='value'` as a POSIX shell reads it back: single quotes keep every character but `'`. */
function shellLine(name: string, value: string): string {
  return `export ${name}='${value.replace(/'/g, "'\\''")}'\n`;
}

export function devEnvText(vars: Record<string, string>): string {
  const header = "# Written by Pinboard's start (development credentials, 24 h): `. .pinboard/dev.env` exports them.\n";
  return (
    header +
    Object.entries(vars)
      .map(([name, value]) => shellLine(name, value))
      .join("")
  );
}

/**
 * Writes `vars` to `<devDir>/.pinboard/dev.env`, never through a link; without a dev folder, or
 * when it cannot be written (read-only checkout), to a private temporary folder removed by `remove`.
 */
export async function writeDevEnvFile(devDir: string | undefined, vars: Record<string, string>): Promise<DevEnvFile> {
  const text = devEnvText(vars);
  if (devDir !== undefined) {
    const root = resolve(devDir);
    const path = join(root, DEV_ENV_FILE);
    try {
      await privateDir(join(root, ".pinboard"), root);
      await writePrivateFile(path, text);
      return { shown: shownPath(path), remove: async () => {} };
    } catch (err) {
      if (err instanceof SymlinkRefusedError) throw err;
    }
  }
  const dir = await mkdtemp(join(tmpdir(), "pinboard-dev-"));
  const path = join(dir, "dev.env");
  await writePrivateFile(path, text);
  return { shown: path, remove: () => rm(dir, { recursive: true, force: true }) };
}

/**
 * Writes the dev env file (under `devDir` when given) and prints the banner lines that name it;
 * the caller removes a temporary file when it stops.
 */
export async function printDevBanner(
  dev: DevPassport,
  where: {
    url: string;
    adminUrl?: string | undefined;
    devDir: string | undefined;
    durableRedisUrl: string | undefined;
  },
): Promise<DevEnvFile> {
  const pinboardUrl = where.adminUrl ?? where.url;
  const file = await writeDevEnvFile(where.devDir, devEnvVars(dev, pinboardUrl, where.durableRedisUrl));
  console.log(
    describeDevPassport(dev, {
      baseUrl: where.url,
      ...(where.adminUrl !== undefined ? { adminUrl: where.adminUrl } : {}),
      envFile: file.shown,
      durable: where.durableRedisUrl !== undefined,
    }),
  );
  return file;
}
