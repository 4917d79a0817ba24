import { describe, expect, it } from "vitest";
import { DEFAULT_URL, parseCommandLine, parseDeadline, UsageError } from "../../src/cli/args.ts";

/**
 * The CLI's command lines, parsed before any request: what each command becomes, where the URL
 * and the credential come from, and the exact message of every usage error (exit status 2).
 */

const TOKEN = { PINBOARD_OPERATOR_TOKEN: "op-token" };

/** The usage error a command line is refused with: its message and the command it names. */
function usageError(argv: string[], env: Record<string, string | undefined> = TOKEN) {
  try {
    parseCommandLine(argv, env);
  } catch (err) {
    expect(err).toBeInstanceOf(UsageError);
    const { message, command, name } = err as UsageError;
    expect(name).toBe("UsageError");
    return { message, command };
  }
  return expect.unreachable(`${JSON.stringify(argv)} was accepted`);
}

describe("parseCommandLine: commands", () => {
  it("reads each command with its options and positionals", () => {
    const globals = {
      url: DEFAULT_URL,
      urlFrom: "default",
      token: "op-token",
      tokenFrom: "PINBOARD_OPERATOR_TOKEN",
      json: false,
    };
    expect(parseCommandLine(["workers"], TOKEN)).toEqual({ help: false, globals, command: { name: "workers" } });
    expect(parseCommandLine(["stats"], TOKEN)).toEqual({ help: false, globals, command: { name: "stats" } });
    expect(parseCommandLine(["health"], TOKEN)).toEqual({ help: false, globals, command: { name: "health" } });
    expect(parseCommandLine(["overview", "--ns", "/threads", "--tag", "hot"], TOKEN)).toEqual({
      help: false,
      globals,
      command: { name: "overview", ns: "/threads", tag: "hot" },
    });
    expect(parseCommandLine(["overview", "--prefix", "ab"], TOKEN).command).toEqual({ name: "overview", prefix: "ab" });
    expect(parseCommandLine(["wind-down", "/threads", "H~1", "--deadline", "30", "--env", "prod"], TOKEN)).toEqual({
      help: false,
      globals,
      command: { name: "wind-down", namespace: "/threads", id: "H~1", deadline: 30, env: "prod" },
    });
    expect(parseCommandLine(["wind-down", "/threads", "--deadline", "none"], TOKEN).command).toEqual({
      name: "wind-down",
      namespace: "/threads",
      deadline: null,
    });
    expect(parseCommandLine(["drain", "client-a"], TOKEN).command).toEqual({
      name: "drain",
      clientId: "client-a",
      deadline: null,
    });
    expect(parseCommandLine(["drain", "client-a", "--deadline", "1.5"], TOKEN).command).toEqual({
      name: "drain",
      clientId: "client-a",
      deadline: 1.5,
    });
    expect(parseCommandLine(["undrain", "client-a"], TOKEN).command).toEqual({ name: "undrain", clientId: "client-a" });
    expect(parseCommandLine(["audit"], TOKEN).command).toEqual({ name: "audit" });
    expect(parseCommandLine(["audit", "--limit", "20", "--kind", "Event"], TOKEN).command).toEqual({
      name: "audit",
      limit: 20,
      kind: "event",
    });
  });

  it("takes options before or after the command", () => {
    expect(parseCommandLine(["--json", "--url", "https://pb.example", "workers"], TOKEN)).toEqual(
      parseCommandLine(["workers", "--url", "https://pb.example", "--json"], TOKEN),
    );
    expect(parseCommandLine(["--json", "workers"], TOKEN)).toMatchObject({ globals: { json: true } });
  });

  it("sweep-now talks to Redis: no URL, no credential needed", () => {
    expect(parseCommandLine(["sweep-now", "--json"], {})).toEqual({
      help: false,
      globals: { url: "", json: true },
      command: { name: "sweep-now" },
    });
  });
});

describe("parseCommandLine: where the URL and the credential come from", () => {
  it("--url, else PINBOARD_URL, else the default; --token, else PINBOARD_OPERATOR_TOKEN, trimmed", () => {
    expect(DEFAULT_URL).toBe("http://127.0.0.1:8787");
    const env = { PINBOARD_URL: "http://env.example:1", PINBOARD_OPERATOR_TOKEN: " env-token " };
    // Where each came from is kept: messages name the setting to change.
    expect(parseCommandLine(["workers"], env)).toMatchObject({
      globals: {
        url: "http://env.example:1",
        urlFrom: "PINBOARD_URL",
        token: "env-token",
        tokenFrom: "PINBOARD_OPERATOR_TOKEN",
      },
    });
    expect(parseCommandLine(["workers", "--url", "https://flag.example", "--token", "flag-token"], env)).toMatchObject({
      globals: { url: "https://flag.example", urlFrom: "--url", token: "flag-token", tokenFrom: "--token" },
    });
    expect(parseCommandLine(["workers"], { ...TOKEN, PINBOARD_URL: "" })).toMatchObject({
      globals: { url: DEFAULT_URL, urlFrom: "default" },
    });
  });

  const NO_TOKEN = "no operator credential: pass --token or set PINBOARD_OPERATOR_TOKEN";
  it.each<[argv: string[], env: Record<string, string> | undefined, message: string]>([
    [["health", "--url", "ftp://x"], undefined, '--url: expected an http(s) URL, got "ftp://x"'],
    [["health", "--url", "not a url"], undefined, '--url: expected an http(s) URL, got "not a url"'],
    [["stats"], {}, NO_TOKEN],
    [["stats"], { PINBOARD_OPERATOR_TOKEN: "  " }, NO_TOKEN],
    [["stats", "--token", ""], {}, NO_TOKEN],
    [["sweep-now", "--url", "http://x"], undefined, "sweep-now talks to Redis directly and does not take --url"],
    [["sweep-now", "--token", "t"], undefined, "sweep-now talks to Redis directly and does not take --token"],
  ])("refuses %j (env %j): %s", (argv, env, message) => {
    expect(usageError(argv, env)).toEqual({ message, command: argv[0] });
  });
});

describe("parseCommandLine: help", () => {
  it("is help, for the program or one command", () => {
    expect(parseCommandLine(["--help"], {})).toEqual({ help: true });
    expect(parseCommandLine(["-h"], {})).toEqual({ help: true });
    expect(parseCommandLine(["help"], {})).toEqual({ help: true });
    expect(parseCommandLine(["help", "drain"], {})).toEqual({ help: true, command: "drain" });
    expect(parseCommandLine(["drain", "--help"], {})).toEqual({ help: true, command: "drain" });
  });

  it("refuses help for an unknown command, suggesting a close one", () => {
    expect(usageError(["help", "nope"])).toEqual({ message: 'unknown command "nope"', command: undefined });
    expect(usageError(["help", "worker"])).toEqual({
      message: 'unknown command "worker"; did you mean `workers`?',
      command: undefined,
    });
    expect(usageError(["help", "drain", "x"])).toEqual({ message: 'unknown command "drain x"', command: undefined });
  });
});

describe("parseCommandLine: usage errors", () => {
  it("names what is wrong with the command line", () => {
    const cases: Array<[string[], string, string | undefined]> = [
      [["nope"], 'unknown command "nope"', undefined],
      [["worker"], 'unknown command "worker"; did you mean `workers`?', undefined],
      [["workers", "--tag", "x"], "workers does not take --tag", "workers"],
      [["drain", "c", "--env", "prod"], "drain does not take --env", "drain"],
      [["drain"], "drain: missing <clientId>", "drain"],
      [["wind-down", "--deadline", "5"], "wind-down: missing <namespace>", "wind-down"],
      [["undrain", "x", "y"], 'undrain: unexpected argument "y"', "undrain"],
      [["wind-down", "/a", "b", "c", "--deadline", "5"], 'wind-down: unexpected argument "c"', "wind-down"],
      [["workers", "extra"], 'workers: unexpected argument "extra"', "workers"],
      [["drain", " "], "drain: <clientId> must not be empty", "drain"],
      [["wind-down", "/a", "", "--deadline", "5"], "wind-down: <id> must not be empty", "wind-down"],
      [["wind-down", "/threads", "H~1"], "wind-down: --deadline <seconds|none> is required", "wind-down"],
      [["audit", "--limit", "0"], '--limit: expected a number of entries from 1 to 500, got "0"', "audit"],
      [["audit", "--limit", "501"], '--limit: expected a number of entries from 1 to 500, got "501"', "audit"],
      [["audit", "--limit", "ten"], '--limit: expected a number of entries from 1 to 500, got "ten"', "audit"],
      [["audit", "--kind", "actions"], '--kind: expected action or event, got "actions"', "audit"],
      [["audit", "--tag", "x"], "audit does not take --tag", "audit"],
      [["workers", "--limit", "5"], "workers does not take --limit", "workers"],
    ];
    for (const [argv, message, command] of cases) {
      expect({ argv, ...usageError(argv) }).toEqual({ argv, message, command });
    }
  });

  it("refuses a command line without a command", () => {
    expect(usageError([])).toEqual({ message: "no command given", command: undefined });
    expect(usageError(["--json"])).toEqual({ message: "no command given", command: undefined });
  });

  it("passes on node:util parseArgs' own refusals", () => {
    expect(usageError(["workers", "--bogus"]).message).toMatch(/^Unknown option '--bogus'/);
    expect(usageError(["workers", "--url"]).message).toMatch(/^Option '--url <value>' argument missing/);
  });
});

describe("parseDeadline", () => {
  it("reads seconds from 0 to ten years, or none (any case, surrounding whitespace allowed)", () => {
    expect(parseDeadline("0", "drain")).toBe(0);
    expect(parseDeadline(" 30 ", "drain")).toBe(30);
    expect(parseDeadline("2.25", "drain")).toBe(2.25);
    expect(parseDeadline("315360000", "drain")).toBe(315_360_000);
    expect(parseDeadline("none", "drain")).toBeNull();
    expect(parseDeadline(" NONE ", "wind-down")).toBeNull();
  });

  it("refuses anything else, naming the value", () => {
    for (const raw of ["soon", "-1", "1e3", ".5", "5.", "315360001", "", "0x10", "null"]) {
      expect(() => parseDeadline(raw, "wind-down")).toThrow(
        new UsageError(
          `--deadline: expected seconds from 0 to 315360000 or "none", got ${JSON.stringify(raw)}`,
          "wind-down",
        ),
      );
    }
  });
});
