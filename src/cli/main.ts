import { terminalSafeLines } from "../contract/terminal-safe.ts";
import { isProcessEntry } from "../runtime/node/process/process-entry.ts";
import { type Invocation, parseCommandLine, UsageError } from "./args.ts";
import { HttpError, UnexpectedAnswerError, UnreachableError } from "./client.ts";
import { type CommandContext, runCommand } from "./commands.ts";
import { explainHttpError, explainUnreachable } from "./explain.ts";
import { flush } from "./flush-output.ts";
import { usage } from "./usage.ts";

/**
 * `pinboard …`: the operator command-line tool (launched by bin/pinboard.mjs through tsx).
 * Exit status: 0 on success, 1 when the server refuses (its {"error"} and status on stderr, with
 * hint lines naming the likely cause and fix), cannot be reached, answers unexpectedly, or (health)
 * is not ready; 2 on a usage or configuration error.
 */

export const EXIT_OK = 0;
export const EXIT_FAILURE = 1;
export const EXIT_USAGE = 2;

export interface CliIo extends CommandContext {
  stdout(text: string): void;
  stderr(text: string): void;
}

/**
 * Every line the CLI prints, its --json documents included, is terminal-safe: a worker's string
 * (a clientId, a tag, an error it sent) never carries a control code to the operator's terminal.
 * Tables escape each cell's newlines too; here only the layout's own line breaks stay.
 */
const line = (text: string) => terminalSafeLines(text.endsWith("\n") ? text : `${text}\n`);

/** Runs the CLI on argv (without node and the script) and returns the exit status. */
export async function runCli(argv: readonly string[], io: CliIo): Promise<number> {
  if (argv[0] === "check-worker" || (argv[0] === "help" && argv[1] === "check-worker" && argv.length === 2)) {
    // Its own command line (a worker command after --) and report; loaded only when asked for.
    const { runCheckWorker } = await import("./check-worker/main.ts");
    return runCheckWorker(argv[0] === "help" ? ["--help"] : argv.slice(1), io);
  }
  let invocation: Invocation;
  try {
    invocation = parseCommandLine(argv, io.env);
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    return usageError(io, err);
  }
  if (invocation.help) {
    io.stdout(line(usage(invocation.command)));
    return EXIT_OK;
  }

  const { command, globals } = invocation;
  try {
    const output = await runCommand(command, globals, io);
    io.stdout(line(output.text));
    for (const text of output.stderr ?? []) io.stderr(line(text));
    return output.exitCode ?? EXIT_OK;
  } catch (err) {
    // The server's error string first, exactly as sent; the cause and the fix on hint lines.
    if (err instanceof HttpError) {
      const hints = explainHttpError(err, { command, globals, now: io.now() });
      for (const text of [`pinboard: ${err.error} (HTTP ${err.status})`, ...hints]) io.stderr(line(text));
      return EXIT_FAILURE;
    }
    if (err instanceof UnreachableError) {
      for (const text of [`pinboard: ${err.message}`, ...explainUnreachable(err, globals)]) io.stderr(line(text));
      return EXIT_FAILURE;
    }
    if (err instanceof UnexpectedAnswerError) {
      io.stderr(line(`pinboard: ${err.message}`));
      return EXIT_FAILURE;
    }
    if (err instanceof UsageError) return usageError(io, err);
    io.stderr(line(`pinboard: ${err instanceof Error ? err.message : String(err)}`));
    return EXIT_FAILURE;
  }
}

function usageError(io: CliIo, err: UsageError): number {
  io.stderr(line(`pinboard: ${err.message}`));
  io.stderr(line(`Run "pinboard ${err.command ? `${err.command} ` : ""}--help" for usage.`));
  return EXIT_USAGE;
}

/** Writes everything, then exits: pooled sockets or timers must not hold the process open. */
async function main(): Promise<void> {
  // A reader that stops early (`pinboard workers | head -1`) is not an error of the CLI.
  process.stdout.on("error", (err: NodeJS.ErrnoException) =>
    process.exit(err.code === "EPIPE" ? EXIT_OK : EXIT_FAILURE),
  );
  const code = await runCli(process.argv.slice(2), {
    env: process.env,
    now: () => Date.now(),
    stdout: (text) => void process.stdout.write(text),
    stderr: (text) => void process.stderr.write(text),
  });
  await Promise.all([flush(process.stdout), flush(process.stderr)]);
  process.exit(code);
}

if (isProcessEntry(import.meta.url)) void main();
