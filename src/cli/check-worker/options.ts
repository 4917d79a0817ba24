import { parseArgs } from "node:util";
import type { CheckOptions } from "./run.ts";

export const USAGE = `usage: pinboard check-worker [options] -- <worker command> [args…]
       pinboard check-worker --listen <host:port> [options]

Checks a worker against Pinboard's worker contract (docs/protocol.md, Part 2) from Pinboard's
side: it serves a registry of its own (register, heartbeat, release, tag, deregister), starts the
worker command with PINBOARD_URL pointing at it and PINBOARD_WORKER_TOKEN set (or, with --listen
alone, waits for a worker started by hand), and once the worker registered drives the challenge
probe, every attestation refusal, the epoch guard, _pinned/stats, _wake, _alarm, a wind_down,
a drain and a withheld lease. Prints a line per check: PASS, FAIL (what came back and what the
contract says) or SKIP (a route the contract lets a worker leave out).

  --listen <host:port>  where the checker's registry listens (default 127.0.0.1 on a free port)
  --namespace <ns>      the namespace to send forwards to (default: the first one registered)
  --lease-ms <ms>       expiresInMs the registry grants (default 3000; the lease checks wait for it)
  --wait-ms <ms>        how long to wait for the worker's register (default 20000)
  --json                print the report as JSON
  -h, --help            show this help

  pinboard check-worker -- npx tsx examples/worker.ts
  pinboard check-worker --listen 127.0.0.1:8790 --namespace /rooms

Exit status: 0 when every check passed (or was skipped), 1 when one failed or the worker never
registered, 2 on a usage error.
`;

export class CheckUsageError extends Error {}

export type ParsedCommandLine =
  | { help: true }
  | { help: false; json: boolean; options: Omit<CheckOptions, "announce"> };

const OPTIONS = {
  listen: { type: "string" },
  namespace: { type: "string" },
  "lease-ms": { type: "string" },
  "wait-ms": { type: "string" },
  json: { type: "boolean" },
  help: { type: "boolean", short: "h" },
} as const;

/** argv after `check-worker`: options, then `--` and the worker command. */
export function parseCheckWorkerArgs(argv: readonly string[]): ParsedCommandLine {
  const split = argv.indexOf("--");
  const own = split === -1 ? [...argv] : argv.slice(0, split);
  const command = split === -1 ? null : argv.slice(split + 1);
  let values: Partial<Record<keyof typeof OPTIONS, string | boolean>>;
  try {
    const parsed = parseArgs({ args: own, options: OPTIONS, allowPositionals: true, strict: true });
    if (parsed.positionals.length > 0)
      throw new CheckUsageError(
        `unexpected argument ${JSON.stringify(parsed.positionals[0])}: put the worker command after --`,
      );
    values = parsed.values;
  } catch (err) {
    if (err instanceof CheckUsageError) throw err;
    throw new CheckUsageError(err instanceof Error ? err.message : String(err));
  }
  if (values.help === true) return { help: true };
  if (command !== null && command.length === 0) throw new CheckUsageError("no worker command after --");
  if (command === null && values.listen === undefined)
    throw new CheckUsageError("give the worker command after --, or --listen <host:port> to wait for a worker");
  const namespace = values.namespace as string | undefined;
  return {
    help: false,
    json: values.json === true,
    options: {
      command,
      listen: values.listen === undefined ? { host: "127.0.0.1", port: 0 } : hostPort(values.listen as string),
      leaseMs: milliseconds("--lease-ms", values["lease-ms"] as string | undefined, 3000, 300),
      waitMs: milliseconds("--wait-ms", values["wait-ms"] as string | undefined, 20_000, 100),
      ...(namespace !== undefined ? { namespace } : {}),
    },
  };
}

function hostPort(raw: string): { host: string; port: number } {
  const match = /^(\[[^\]]+\]|[^:]+):(\d{1,5})$/.exec(raw.trim());
  if (!match || Number(match[2]) > 65535)
    throw new CheckUsageError(`--listen: expected <host:port> such as 127.0.0.1:8790, got ${JSON.stringify(raw)}`);
  return { host: match[1]!.replace(/^\[|\]$/g, ""), port: Number(match[2]) };
}

function milliseconds(flag: string, raw: string | undefined, fallback: number, min: number): number {
  if (raw === undefined) return fallback;
  const value = raw.trim();
  if (!/^\d{1,7}$/.test(value) || Number(value) < min)
    throw new CheckUsageError(`${flag}: expected milliseconds from ${min} to 9999999, got ${JSON.stringify(raw)}`);
  return Number(value);
}
