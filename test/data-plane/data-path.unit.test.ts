import { describe, expect, it } from "vitest";
import { isDataPlanePath, parseDataPath } from "../../src/data-plane/data-path.ts";
import { type Answer, answerOf, PinboardError } from "../../src/errors/pinboard-error.ts";

/**
 * Which paths are the data plane's and how one splits into namespace, id and the rest
 * (docs/protocol.md, Data plane): a path outside the base path or naming no worker namespace is
 * 404 (null); a bad id is 400 text/plain, `empty id` or `invalid id`.
 */

/** The answer parseDataPath's refusal renders as. */
function refusal(pathname: string, basePath = ""): Answer {
  try {
    parseDataPath(pathname, basePath);
  } catch (err) {
    expect(err).toBeInstanceOf(PinboardError);
    return answerOf(err as PinboardError);
  }
  return expect.unreachable(`${pathname} was accepted`);
}

const textPlain = (body: string): Answer => ({
  status: 400,
  headers: { "content-type": "text/plain; charset=utf-8" },
  body,
});

describe("parseDataPath", () => {
  it("splits /{ns}/{id}{rest}, the rest empty or starting with /", () => {
    expect(parseDataPath("/threads/abc", "")).toEqual({ ns: "/threads", id: "abc", rest: "" });
    expect(parseDataPath("/threads/abc/", "")).toEqual({ ns: "/threads", id: "abc", rest: "/" });
    expect(parseDataPath("/threads/abc/messages/7", "")).toEqual({ ns: "/threads", id: "abc", rest: "/messages/7" });
    expect(parseDataPath("/a.b~c_d-e/A-z_0.9~", "")).toEqual({ ns: "/a.b~c_d-e", id: "A-z_0.9~", rest: "" });
  });

  it("strips the base path, and answers null outside it", () => {
    expect(parseDataPath("/pb/threads/abc/x", "/pb")).toEqual({ ns: "/threads", id: "abc", rest: "/x" });
    expect(parseDataPath("/threads/abc", "/pb")).toBeNull();
    expect(parseDataPath("/pbx/threads/abc", "/pb")).toBeNull();
    expect(parseDataPath("/pb", "/pb")).toBeNull();
    expect(parseDataPath("/pb/", "/pb")).toBeNull();
  });

  it("answers null for a path without an id segment or with a namespace that is not a worker's", () => {
    expect(parseDataPath("/", "")).toBeNull();
    expect(parseDataPath("/threads", "")).toBeNull();
    expect(parseDataPath("//abc", "")).toBeNull();
    expect(parseDataPath("/thr%2Feads/abc", "")).toBeNull();
    expect(parseDataPath("/../abc", "")).toBeNull();
    expect(parseDataPath(`/${"n".repeat(129)}/abc`, "")).toBeNull();
    for (const reserved of ["/registry", "/_pinned", "/healthz", "/readyz", "/metrics", "/console", "/openapi.json"]) {
      expect(parseDataPath(`${reserved}/abc`, "")).toBeNull();
    }
  });

  it("takes a namespace of 128 characters and an id of 256", () => {
    const ns = `/${"n".repeat(128)}`;
    const id = "i".repeat(256);
    expect(parseDataPath(`${ns}/${id}`, "")).toEqual({ ns, id, rest: "" });
  });

  it("answers 400 text/plain `empty id` for an empty id segment", () => {
    expect(refusal("/threads/")).toEqual(textPlain("empty id"));
    expect(refusal("/threads//rest")).toEqual(textPlain("empty id"));
    expect(refusal("/pb/threads/", "/pb")).toEqual(textPlain("empty id"));
  });

  it("answers 400 text/plain `invalid id` for an id over 256 characters or outside [A-Za-z0-9._~-]", () => {
    expect(refusal(`/threads/${"i".repeat(257)}`)).toEqual(textPlain("invalid id"));
    for (const id of ["a%20b", "a b", "a+b", "a:b", "a@b", "a!b", "ü", "a;b", "a,b"]) {
      expect(refusal(`/threads/${id}/x`)).toEqual(textPlain("invalid id"));
    }
  });
});

describe("isDataPlanePath", () => {
  it("is false for Pinboard's own routes and /metrics, true for everything else under the base path", () => {
    for (const own of ["/healthz", "/readyz", "/openapi.json", "/console", "/registry", "/registry/workers"]) {
      expect(isDataPlanePath(own, "")).toBe(false);
    }
    expect(isDataPlanePath("/metrics", "")).toBe(false);
    for (const data of ["/threads/abc", "/threads", "/", "/registryx/a", "/console/x", "/healthz/x"]) {
      expect(isDataPlanePath(data, "")).toBe(true);
    }
  });

  it("under a base path: its own routes sit under it, /metrics and paths outside it never are the data plane's", () => {
    expect(isDataPlanePath("/pb/threads/abc", "/pb")).toBe(true);
    expect(isDataPlanePath("/pb", "/pb")).toBe(true);
    expect(isDataPlanePath("/pb/healthz", "/pb")).toBe(false);
    expect(isDataPlanePath("/pb/registry/register", "/pb")).toBe(false);
    expect(isDataPlanePath("/healthz", "/pb")).toBe(false);
    expect(isDataPlanePath("/threads/abc", "/pb")).toBe(false);
    expect(isDataPlanePath("/pbx/threads/abc", "/pb")).toBe(false);
    expect(isDataPlanePath("/metrics", "/pb")).toBe(false);
    expect(isDataPlanePath("/pb/metrics", "/pb")).toBe(true);
  });
});
