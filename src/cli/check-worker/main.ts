/**
 * `pinboard check-worker`: checks a worker implementation against the worker contract from
 * Pinboard's side (see options.ts for the usage, run.ts for what runs). Exit status: 0 when every
 * check passed or was skipped, 1 when one failed, 2 on a usage error.
 */
import { terminalSafeLines } from "../../contract/terminal-safe.ts";
import { isProcessEntry } from "../../runtime/node/process/process-entry.ts";
import { flush } from "../flush-output.ts";
import { CheckUsageError, parseCheckWorkerArgs, USAGE } from "./options.ts";
import { renderReport } from "./report.ts";
import { checkWorker } from "./run.ts";
import { stopWorkers } from "./worker-process.ts";

export interface CheckWorkerIo {
  stdout(text: string): void;
  stderr(text: string): void;
}

const line = (text: string) => terminalSafeLines(text.endsWith("\n") ? text : `${text}\n`);

export async function runCheckWorker(argv: readonly string[], io: CheckWorkerIo): Promise<number> {
  let parsed: ReturnType<typeof parseCheckWorkerArgs>;
  try {
    parsed = parseCheckWorkerArgs(argv);
  } catch (err) {
    if (!(err instanceof CheckUsageError)) throw err;
    io.stderr(line(`pinboard check-worker: ${err.message}`));
    io.stderr(line('Run "pinboard check-worker --help" for usage.'));
    return 2;
  }
  if (parsed.help) {
    io.stdout(USAGE);
    return 0;
  }
  const stopping = stopOnSignals();
  let outcome: Awaited<ReturnType<typeof checkWorker>>;
  try {
    outcome = await checkWorker({ ...parsed.options, announce: (lines) => io.stderr(line(lines.join("\n"))) });
  } catch (err) {
    // The checker's own trouble, such as --listen on a port in use: no report to give.
    io.stderr(line(`pinboard check-worker: ${err instanceof Error ? err.message : String(err)}`));
    return 1;
  } finally {
    stopping.remove();
  }
  const { report, workerOutput } = outcome;
  if (workerOutput.length > 0)
    io.stderr(line(["the worker's last output lines:", ...workerOutput.map((l) => `  ${l}`)].join("\n")));
  io.stdout(line(parsed.json ? JSON.stringify(report, null, 2) : renderReport(report)));
  return report.ok ? 0 : 1;
}

/**
 * An interrupted check stops the worker it started (its own process group, which the terminal's
 * Ctrl-C does not reach) before exiting 130 or 143. Removed once the check is over.
 */
function stopOnSignals(): { remove(): void } {
  const handlers = (
    [
      ["SIGINT", 130],
      ["SIGTERM", 143],
    ] as const
  ).map(([signal, code]) => {
    const handler = () => void stopWorkers(2000).finally(() => process.exit(code));
    process.once(signal, handler);
    return [signal, handler] as const;
  });
  return {
    remove: () => {
      for (const [signal, handler] of handlers) process.off(signal, handler);
    },
  };
}

async function main(): Promise<void> {
  process.stdout.on("error", (err: NodeJS.ErrnoException) => process.exit(err.code === "EPIPE" ? 0 : 1));
  const code = await runCheckWorker(process.argv.slice(2), {
    stdout: (text) => void process.stdout.write(text),
    stderr: (text) => void process.stderr.write(text),
  });
  await Promise.all([flush(process.stdout), flush(process.stderr)]);
  process.exit(code);
}

if (isProcessEntry(import.meta.url)) void main();
