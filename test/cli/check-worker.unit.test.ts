import { describe, expect, it } from "vitest";
import { statsProblems } from "../../src/cli/check-worker/checks-routes.ts";
import { parseCheckWorkerArgs } from "../../src/cli/check-worker/options.ts";
import { renderCheck, SHOWN_CHARS, shown } from "../../src/cli/check-worker/report.ts";

describe("check-worker's command line", () => {
  it("takes its options before -- and the worker command after it", () => {
    expect(parseCheckWorkerArgs(["--json", "--lease-ms", "6000", "--", "python", "worker.py", "--json"])).toEqual({
      help: false,
      json: true,
      options: {
        command: ["python", "worker.py", "--json"],
        listen: { host: "127.0.0.1", port: 0 },
        leaseMs: 6000,
        waitMs: 20_000,
      },
    });
  });

  it("waits for a worker started by hand with --listen alone", () => {
    expect(parseCheckWorkerArgs(["--listen", "[::1]:8790", "--namespace", "/rooms"])).toEqual({
      help: false,
      json: false,
      options: {
        command: null,
        listen: { host: "::1", port: 8790 },
        leaseMs: 3000,
        waitMs: 20_000,
        namespace: "/rooms",
      },
    });
  });

  it.each([
    [[], "give the worker command after --, or --listen <host:port> to wait for a worker"],
    [["--"], "no worker command after --"],
    [["worker.py"], 'unexpected argument "worker.py": put the worker command after --'],
    [["--listen", "8790"], '--listen: expected <host:port> such as 127.0.0.1:8790, got "8790"'],
    [["--lease-ms", "100", "--", "w"], '--lease-ms: expected milliseconds from 300 to 9999999, got "100"'],
  ])("refuses %j", (argv, message) => {
    expect(() => parseCheckWorkerArgs(argv)).toThrow(message);
  });
});

describe("check-worker's stats check", () => {
  it("accepts any object whose known fields have their types", () => {
    expect(statsProblems({})).toEqual([]);
    expect(
      statsProblems({
        headroom: 3,
        draining: false,
        leaseHealthy: true,
        namespaces: { "/a": {} },
        process: { uptimeMs: 1, rssBytes: 2 },
        instances: [{ ns: "/a", id: "x", inflight: 0, sockets: 1 }],
        extra: "anything",
      }),
    ).toEqual([]);
  });

  it("names each field of the wrong type", () => {
    expect(
      statsProblems({
        headroom: "3",
        draining: 1,
        namespaces: [],
        process: { uptimeMs: "1" },
        instances: [{ id: "x" }],
      }),
    ).toEqual([
      "headroom is not a number",
      "draining is not a boolean",
      "namespaces is not an object",
      "process.uptimeMs is not a number",
      "an item of instances is not an object with its ns",
    ]);
  });
});

describe("check-worker's report lines", () => {
  it("escapes a worker's control codes and cuts a long answer", () => {
    expect(shown("a\u001b[2Jb\nc")).toBe("a\\u001b[2Jb\\u000ac");
    const long = shown("x".repeat(1000));
    expect(long).toBe(`${"x".repeat(SHOWN_CHARS)}… (1000 chars)`);
  });

  it("says what came back and what the contract says on a failure", () => {
    expect(renderCheck({ status: "fail", group: "epoch", title: "stale", got: "200 {}", expected: "409 x" })).toBe(
      "FAIL epoch: stale: got 200 {}; the contract says 409 x",
    );
    expect(renderCheck({ status: "skip", group: "wake", title: "_wake", note: "not mounted" })).toBe(
      "SKIP wake: _wake (not mounted)",
    );
  });
});
