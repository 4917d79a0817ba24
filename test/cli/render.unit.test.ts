import { describe, expect, it } from "vitest";
import { renderHealth, renderOverview } from "../../src/cli/render.ts";
import type { HealthReply, OverviewReply } from "../../src/cli/replies.ts";

/**
 * What the CLI prints tells an operator what the next request will see: the cold-start line
 * tells "no window opened yet" from "open, N s left" from "over"; the overview names a
 * placement's owner by clientId.
 */

const health = (quarantineMs: number, resolutions: Record<string, number> = {}): HealthReply => ({
  resolutions,
  connections: 0,
  quarantineMs,
  uptimeMs: 4000,
});
const coldStartLine = (answer: HealthReply, ready = true) =>
  renderHealth(answer, ready)
    .split("\n")
    .find((l) => l.startsWith("cold start:"))!;

describe("pinboard health: the cold-start line", () => {
  it("with no window open says so, and what opens one, before any request and after placements alike", () => {
    const expected =
      "no window open (in a Redis Pinboard did not create, a bucket's first request opens one: " +
      "a lease of 503s for new placements there)";
    const value = (line: string) => line.replace(/^cold start: +/, "");
    expect(value(coldStartLine(health(0)))).toBe(expected);
    expect(value(coldStartLine(health(0, { forward: 5, quarantine: 2 })))).toBe(expected);
  });
  it("while a window is open gives the seconds left", () => {
    expect(coldStartLine(health(11_200, { quarantine: 3 }))).toMatch(/: +12s left in the longest open window/);
  });
  it("on a node that is not ready says unknown, not the full lease it reports as a countdown", () => {
    expect(coldStartLine(health(15_000), false)).toMatch(/^cold start: +unknown while the node is not ready$/);
    expect(coldStartLine(health(0, { forward: 5 }), false)).toMatch(
      /^cold start: +unknown while the node is not ready$/,
    );
    expect(renderHealth(health(15_000), false)).toMatch(/^ready: +no \(GET \/readyz answered 503\)\n/);
  });
});

describe("pinboard overview", () => {
  it("names placements' owners by clientId; an owner not listed by the start of its session", () => {
    const s1 = "a".repeat(32);
    const s2 = "b".repeat(32);
    const worker = {
      sessionId: s1,
      clientId: "worker-a",
      advertiseUrl: "http://w",
      namespaces: ["/counter"],
      hostname: null,
      envs: {},
      takeover: null,
      headroom: 100,
      draining: false,
      expiry: 10_000,
    };
    const answer: OverviewReply = {
      workers: [worker],
      bindings: { hostnames: {}, envs: {} },
      namespaces: [
        {
          hostname: null,
          env: null,
          namespace: "/counter",
          sessionIds: [s1],
          entries: [
            { id: "x", sessionId: s1 },
            { id: "y", sessionId: s2 },
          ],
        },
      ],
    };
    const placements = renderOverview(answer, 0).split("\n\n")[2]!.split("\n");
    expect(placements[1]).toMatch(/^NAMESPACE +ID +CLIENT +TAG +WIND-DOWN$/);
    expect(placements[2]).toMatch(/^\/counter +x +worker-a +- +-$/);
    expect(placements[3]).toMatch(/^\/counter +y +session:bbbbbbbb +- +-$/);
  });
});

describe("exact output", () => {
  it("pinboard health: aligned pairs, then the resolutions table sorted by outcome", () => {
    const answer: HealthReply = {
      resolutions: { quarantine: 2, forward: 5 },
      connections: 3,
      quarantineMs: 0,
      uptimeMs: 4000,
      rssBytes: 50_541_363,
    };
    expect(renderHealth(answer, true)).toBe(
      [
        "ready:         yes",
        "uptime:        4s",
        "connections:   3",
        "cold start:    no window open (in a Redis Pinboard did not create, a bucket's first request opens one: a lease of 503s for new placements there)",
        "memory (rss):  48.2 MiB",
        "",
        "RESOLUTIONS",
        "OUTCOME     COUNT",
        "forward         5",
        "quarantine      2",
      ].join("\n"),
    );
    expect(renderHealth(health(0), true).split("\n").slice(-2)).toEqual(["RESOLUTIONS", "no resolutions yet"]);
  });

  it("an empty fleet: each section says so", () => {
    const empty: OverviewReply = { workers: [], bindings: { hostnames: {}, envs: {} }, namespaces: [] };
    expect(renderOverview(empty, 0)).toBe(
      "WORKERS (0)\nno live workers\n\nNAMESPACES (0)\nno namespaces\n\nPLACEMENTS (0)\nno live placements",
    );
  });

  it("hostname-aware mode: each binding's env and that env's takeover, HOSTNAME and ENV columns", () => {
    const s1 = "a".repeat(32);
    const answer: OverviewReply = {
      workers: [
        {
          sessionId: s1,
          clientId: "worker-a",
          advertiseUrl: "http://10.0.0.1:9000",
          namespaces: ["/counter"],
          hostname: "a.example",
          envs: { "/counter": "prod" },
          takeover: "wind_down",
          headroom: 100,
          draining: false,
          expiry: 10_000,
        },
      ],
      // bindings.envs is keyed by env (prod, staging), not by the hostname/namespace key.
      bindings: {
        hostnames: { "b.example/counter": "staging", "a.example/counter": "prod" },
        envs: { prod: "wind_down", staging: "deny" },
      },
      namespaces: [
        {
          hostname: "a.example",
          env: "prod",
          namespace: "/counter",
          sessionIds: [s1],
          entries: [{ id: "x", sessionId: s1, tag: "t1" }],
        },
      ],
    };
    expect(renderOverview(answer, 0).split("\n")).toEqual([
      "WORKERS (1)",
      "SESSION                           CLIENT    HOSTNAME   NAMESPACES     HEADROOM  DRAINING  DEGRADED  EXPIRES-IN",
      "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa  worker-a  a.example  /counter@prod       100  no        -                10s",
      "",
      "BINDINGS (2)",
      "HOSTNAME/NAMESPACE  ENV      TAKEOVER",
      "a.example/counter   prod     wind_down",
      "b.example/counter   staging  deny",
      "",
      "NAMESPACES (1)",
      "NAMESPACE  HOSTNAME   ENV   WORKERS  PLACEMENTS",
      "/counter   a.example  prod        1           1",
      "",
      "PLACEMENTS (1)",
      "NAMESPACE  HOSTNAME   ENV   ID  CLIENT    TAG  WIND-DOWN",
      "/counter   a.example  prod  x   worker-a  t1   -",
    ]);
  });
});
