import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";

/**
 * How `npm run dev` hands the Worker its settings: a dotenv file that `wrangler dev --env-file`
 * reads, never `--var NAME:value` arguments, which every user of the machine can read in `ps`
 * (the passport secret and the REST bridge's token among them). The file lives in a private
 * temporary directory (mode 0700, the file 0600) and is removed when the script stops.
 *
 * wrangler 4 reads the file with dotenv 16 and then expands `$NAME` and `${NAME}` in the values
 * (dotenv-expand 12; `\$` stands for a literal `$`), so each value is written quoted, with every
 * `$` escaped, in a quote character it does not contain. Line breaks have no faithful encoding
 * there, nor for a value holding all three quote characters: such a value is refused, naming the
 * variable.
 */

export class EnvFileError extends Error {
  constructor(
    readonly variable: string,
    reason: string,
  ) {
    super(`${variable}: npm run dev cannot hand wrangler dev a value ${reason}`);
    this.name = "EnvFileError";
  }
}

/** One `NAME='value'` line per variable, read back by wrangler as exactly `value`. */
export function envFileText(vars: Record<string, string>): string {
  return Object.entries(vars)
    .map(([name, value]) => `${name}=${quote(name, value)}\n`)
    .join("");
}

function quote(name: string, value: string): string {
  if (/[\r\n]/.test(value)) throw new EnvFileError(name, "with a line break; put it on one line");
  const escaped = value.replace(/\$/g, "\\$");
  // Single quotes and backticks keep every other character as it is; double quotes would turn
  // the two characters \n into a line break, so they come last and only without those.
  for (const q of ["'", "`", '"']) {
    if (escaped.includes(q)) continue;
    if (q === '"' && /\\[nr]/.test(escaped)) continue;
    return `${q}${escaped}${q}`;
  }
  throw new EnvFileError(name, "holding all three quote characters (' \" `)");
}

export interface WorkerEnvFile {
  path: string;
  /** Removes the file and its directory; safe to call more than once. */
  remove(): Promise<void>;
}

/** Writes `vars` to a fresh 0600 file in a fresh private temporary directory. */
export async function writeWorkerEnvFile(vars: Record<string, string>): Promise<WorkerEnvFile> {
  const text = envFileText(vars);
  const dir = await mkdtemp(join(tmpdir(), "pinboard-dev-"));
  const path = join(dir, "worker.env");
  const remove = () => rm(dir, { recursive: true, force: true });
  try {
    await writeFile(path, text, { mode: 0o600, flag: "wx" });
  } catch (err) {
    await remove();
    throw err;
  }
  return { path, remove };
}
