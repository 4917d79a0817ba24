import { describe, expect, it } from "vitest";
import { instanceUrl, WorkerUrlError, workerUrl } from "../../src/outbound/worker-url.ts";

/**
 * The one builder of the URLs Pinboard calls on a worker outside the data plane (challenge,
 * stats, _wake, _alarm): whatever the namespace, id or challenge, the URL stays inside the
 * advertise URL (its origin and its path), or is not built at all.
 */

const ADVERTISE = "http://worker.test:8080/base/path";

/** Either a WorkerUrlError, or a URL on the advertise URL's origin under its path. */
function staysInside(build: () => string): string | "refused" {
  let url: string;
  try {
    url = build();
  } catch (err) {
    expect(err).toBeInstanceOf(WorkerUrlError);
    return "refused";
  }
  const parsed = new URL(url);
  expect(parsed.origin).toBe("http://worker.test:8080");
  expect(parsed.pathname.startsWith("/base/path/")).toBe(true);
  expect(parsed.hash).toBe("");
  return url;
}

const HOSTILE = [
  ".",
  "..",
  "%2e%2e",
  "%2E.",
  ".%2e",
  "a/../..",
  "../../admin",
  "/",
  "//evil.test",
  "a?x=1",
  "a#frag",
  "\\..\\..",
  "..;",
  "@evil.test",
  "a b",
  "\u0000",
  "\ud800",
  "é",
  "",
];

describe("workerUrl", () => {
  it("builds the contract's URLs as before for well-formed names", () => {
    expect(workerUrl(ADVERTISE, ["_pinned", "stats"])).toBe("http://worker.test:8080/base/path/_pinned/stats");
    expect(workerUrl("http://127.0.0.1:9000", ["_pinned", "challenge"], [["challenge", "c 1&x='y'#"]])).toBe(
      "http://127.0.0.1:9000/_pinned/challenge?challenge=c%201%26x%3D%27y%27%23",
    );
    expect(instanceUrl(ADVERTISE, "/threads", "T1.a~b-c_d", "_wake")).toBe(
      "http://worker.test:8080/base/path/threads/T1.a~b-c_d/_wake",
    );
    expect(instanceUrl("https://w.test", "/..x", "...", "_alarm")).toBe("https://w.test/..x/.../_alarm");
  });

  it("refuses dot segments, which a URL parser would resolve out of the path", () => {
    for (const [ns, id] of [
      ["/..", "x"],
      ["/.", "x"],
      ["/threads", ".."],
      ["/threads", "."],
    ] as const) {
      expect(() => instanceUrl(ADVERTISE, ns, id, "_wake")).toThrow(
        new WorkerUrlError(`not a path segment: ${JSON.stringify(ns === "/threads" ? id : ns.slice(1))}`),
      );
    }
    expect(() => instanceUrl(ADVERTISE, "threads", "x", "_wake")).toThrow(WorkerUrlError);
  });

  it("keeps every hostile namespace, id and challenge inside the advertise URL, or builds nothing", () => {
    for (const hostile of HOSTILE) {
      staysInside(() => instanceUrl(ADVERTISE, `/${hostile}`, "x", "_wake"));
      staysInside(() => instanceUrl(ADVERTISE, "/threads", hostile, "_alarm"));
      const url = staysInside(() => workerUrl(ADVERTISE, ["_pinned", "challenge"], [["challenge", hostile]]));
      if (url !== "refused") {
        expect(new URL(url).pathname).toBe("/base/path/_pinned/challenge");
        expect(new URL(url).searchParams.get("challenge")).toBe(hostile);
      }
    }
    // Encoded, never interpreted: a slash or a percent-encoded dot stays inside its segment.
    expect(instanceUrl(ADVERTISE, "/threads", "a/../..", "_wake")).toBe(
      "http://worker.test:8080/base/path/threads/a%2F..%2F../_wake",
    );
    expect(instanceUrl(ADVERTISE, "/threads", "%2e%2e", "_wake")).toBe(
      "http://worker.test:8080/base/path/threads/%252e%252e/_wake",
    );
    expect(() => instanceUrl(ADVERTISE, "/threads", "\ud800", "_wake")).toThrow(
      new WorkerUrlError("not well-formed Unicode"),
    );
  });

  it("refuses an advertise URL that is not a plain http(s) URL", () => {
    for (const bad of ["not a url", "ftp://w.test", "http://u:p@w.test", "http://w.test/?q", "http://w.test/#f"]) {
      expect(() => workerUrl(bad, ["_pinned", "stats"])).toThrow(WorkerUrlError);
    }
  });
});
