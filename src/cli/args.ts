import { parseArgs } from "node:util";
import { unknownCommandMessage } from "./suggest.ts";
import { type CommandName, isCommand } from "./usage.ts";

/** A command line the CLI cannot act on: exit status 2, the message and a pointer to --help. */
export class UsageError extends Error {
  constructor(
    message: string,
    readonly command?: CommandName,
  ) {
    super(message);
    this.name = "UsageError";
  }
}

export const DEFAULT_URL = "http://127.0.0.1:8787";
/** The API's own bound on a deadline (ten years of seconds). */
const MAX_DEADLINE_S = 10 * 365 * 24 * 3600;

export type Command =
  | { name: "workers" | "stats" | "health" | "sweep-now" }
  | { name: "overview"; ns?: string; prefix?: string; tag?: string }
  | { name: "wind-down"; namespace: string; id?: string; deadline: number | null; env?: string }
  | { name: "drain"; clientId: string; deadline: number | null }
  | { name: "undrain"; clientId: string }
  | { name: "audit"; limit?: number; kind?: "action" | "event"; before?: string };

/** Where the URL came from, for messages that tell the operator what to change. */
export type UrlSource = "--url" | "PINBOARD_URL" | "default";
export type TokenSource = "--token" | "PINBOARD_OPERATOR_TOKEN";

/**
 * Where and as whom to talk, and where each came from; the URL's and the credential's fields are
 * absent (url "") only for sweep-now, which goes to Redis.
 */
export interface Globals {
  url: string;
  urlFrom?: UrlSource;
  token?: string;
  tokenFrom?: TokenSource;
  json: boolean;
}

export type Invocation = { help: true; command?: CommandName } | { help: false; globals: Globals; command: Command };

const OPTIONS = {
  url: { type: "string" },
  token: { type: "string" },
  json: { type: "boolean" },
  help: { type: "boolean", short: "h" },
  ns: { type: "string" },
  prefix: { type: "string" },
  tag: { type: "string" },
  deadline: { type: "string" },
  env: { type: "string" },
  limit: { type: "string" },
  kind: { type: "string" },
  before: { type: "string" },
} as const;
type OptionName = keyof typeof OPTIONS;

const GLOBAL: readonly OptionName[] = ["url", "token", "json", "help"];

/** Each command's own options and its positionals (required first, then optional). */
const SHAPES: Record<
  CommandName,
  { options: readonly OptionName[]; required: readonly string[]; optional: readonly string[] }
> = {
  workers: { options: [], required: [], optional: [] },
  overview: { options: ["ns", "prefix", "tag"], required: [], optional: [] },
  stats: { options: [], required: [], optional: [] },
  health: { options: [], required: [], optional: [] },
  "wind-down": { options: ["deadline", "env"], required: ["namespace"], optional: ["id"] },
  drain: { options: ["deadline"], required: ["clientId"], optional: [] },
  undrain: { options: [], required: ["clientId"], optional: [] },
  audit: { options: ["limit", "kind", "before"], required: [], optional: [] },
  "sweep-now": { options: [], required: [], optional: [] },
};

/**
 * Parses argv (without node and the script) with node:util parseArgs. Options may come before or
 * after the command; an option the command does not take, a missing or extra positional, or a
 * malformed value is a UsageError. `env` supplies PINBOARD_URL and PINBOARD_OPERATOR_TOKEN.
 */
export function parseCommandLine(argv: readonly string[], env: Record<string, string | undefined>): Invocation {
  const { values, positionals } = strictParse(argv);
  const [first, ...rest] = positionals;

  if (first === "help") {
    if (rest.length === 0) return { help: true };
    const topic = rest[0]!;
    if (!isCommand(topic) || rest.length > 1) throw new UsageError(unknownCommandMessage(rest.join(" ")));
    return { help: true, command: topic };
  }
  if (first === undefined) {
    if (values.help) return { help: true };
    throw new UsageError("no command given");
  }
  if (!isCommand(first)) throw new UsageError(unknownCommandMessage(first));
  if (values.help) return { help: true, command: first };

  const shape = SHAPES[first];
  for (const name of Object.keys(values) as OptionName[]) {
    if (!GLOBAL.includes(name) && !shape.options.includes(name))
      throw new UsageError(`${first} does not take --${name}`, first);
  }
  if (rest.length < shape.required.length) {
    throw new UsageError(`${first}: missing <${shape.required[rest.length]}>`, first);
  }
  if (rest.length > shape.required.length + shape.optional.length) {
    throw new UsageError(
      `${first}: unexpected argument ${JSON.stringify(rest[shape.required.length + shape.optional.length])}`,
      first,
    );
  }
  for (const [i, value] of rest.entries()) {
    if (value.trim() === "")
      throw new UsageError(`${first}: <${[...shape.required, ...shape.optional][i]}> must not be empty`, first);
  }

  const globals = parseGlobals(first, values, env);
  return { help: false, globals, command: buildCommand(first, rest, values) };
}

/** node:util parseArgs over every option any command takes; its own errors are usage errors. */
function strictParse(argv: readonly string[]) {
  try {
    return parseArgs({ args: [...argv], options: OPTIONS, allowPositionals: true, strict: true });
  } catch (err) {
    throw new UsageError(err instanceof Error ? err.message : String(err));
  }
}

function parseGlobals(
  command: CommandName,
  values: Partial<Record<OptionName, string | boolean>>,
  env: Record<string, string | undefined>,
): Globals {
  const json = values.json === true;
  if (command === "sweep-now") {
    for (const name of ["url", "token"] as const) {
      if (values[name] !== undefined)
        throw new UsageError(`sweep-now talks to Redis directly and does not take --${name}`, command);
    }
    return { url: "", json };
  }
  const urlFrom: UrlSource = values.url !== undefined ? "--url" : env.PINBOARD_URL ? "PINBOARD_URL" : "default";
  const url = (values.url as string | undefined) ?? (env.PINBOARD_URL || DEFAULT_URL);
  let parsedUrl: URL;
  try {
    parsedUrl = new URL(url);
  } catch {
    throw new UsageError(`--url: expected an http(s) URL, got ${JSON.stringify(url)}`, command);
  }
  if (parsedUrl.protocol !== "http:" && parsedUrl.protocol !== "https:") {
    throw new UsageError(`--url: expected an http(s) URL, got ${JSON.stringify(url)}`, command);
  }
  const tokenFrom: TokenSource = values.token !== undefined ? "--token" : "PINBOARD_OPERATOR_TOKEN";
  const token = ((values.token as string | undefined) ?? env.PINBOARD_OPERATOR_TOKEN ?? "").trim();
  if (token === "")
    throw new UsageError("no operator credential: pass --token or set PINBOARD_OPERATOR_TOKEN", command);
  return { url, urlFrom, token, tokenFrom, json };
}

function buildCommand(
  name: CommandName,
  args: string[],
  values: Partial<Record<OptionName, string | boolean>>,
): Command {
  const str = (key: OptionName) => values[key] as string | undefined;
  switch (name) {
    case "overview":
      return {
        name,
        ...(str("ns") !== undefined ? { ns: str("ns") } : {}),
        ...(str("prefix") !== undefined ? { prefix: str("prefix") } : {}),
        ...(str("tag") !== undefined ? { tag: str("tag") } : {}),
      };
    case "wind-down": {
      const raw = str("deadline");
      if (raw === undefined) throw new UsageError("wind-down: --deadline <seconds|none> is required", name);
      return {
        name,
        namespace: args[0]!,
        ...(args[1] !== undefined ? { id: args[1] } : {}),
        deadline: parseDeadline(raw, name),
        ...(str("env") !== undefined ? { env: str("env") } : {}),
      };
    }
    case "drain": {
      const raw = str("deadline");
      return { name, clientId: args[0]!, deadline: raw === undefined ? null : parseDeadline(raw, name) };
    }
    case "undrain":
      return { name, clientId: args[0]! };
    case "audit":
      return {
        name,
        ...(str("limit") !== undefined ? { limit: parseLimit(str("limit")!, name) } : {}),
        ...(str("kind") !== undefined ? { kind: parseKind(str("kind")!, name) } : {}),
        ...(str("before") !== undefined ? { before: parseBefore(str("before")!, name) } : {}),
      };
    default:
      return { name };
  }
}

/** Seconds (a non-negative number up to ten years) or "none" for null. */
export function parseDeadline(raw: string, command: CommandName): number | null {
  const value = raw.trim().toLowerCase();
  if (value === "none") return null;
  if (!/^\d+(\.\d+)?$/.test(value) || Number(value) > MAX_DEADLINE_S) {
    throw new UsageError(
      `--deadline: expected seconds from 0 to ${MAX_DEADLINE_S} or "none", got ${JSON.stringify(raw)}`,
      command,
    );
  }
  return Number(value);
}

/** The audit route's own bound on a page. */
const MAX_AUDIT_LIMIT = 500;

/** An entry count from 1 to 500. */
function parseLimit(raw: string, command: CommandName): number {
  const value = raw.trim();
  if (!/^\d{1,3}$/.test(value) || Number(value) < 1 || Number(value) > MAX_AUDIT_LIMIT)
    throw new UsageError(
      `--limit: expected a number of entries from 1 to ${MAX_AUDIT_LIMIT}, got ${JSON.stringify(raw)}`,
      command,
    );
  return Number(value);
}

/** An entry id, as a page's cursor names it: 1733580000000-0. */
function parseBefore(raw: string, command: CommandName): string {
  const value = raw.trim();
  if (!/^\d{1,19}-\d{1,19}$/.test(value))
    throw new UsageError(`--before: expected an entry id (a page's cursor), got ${JSON.stringify(raw)}`, command);
  return value;
}

function parseKind(raw: string, command: CommandName): "action" | "event" {
  const value = raw.trim().toLowerCase();
  if (value !== "action" && value !== "event")
    throw new UsageError(`--kind: expected action or event, got ${JSON.stringify(raw)}`, command);
  return value;
}
