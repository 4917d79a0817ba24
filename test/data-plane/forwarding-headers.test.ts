import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FORWARDING_HEADERS } from "../../src/data-plane/header-hygiene.ts";
import { Echo, type EchoAnswer } from "../support/echo-instance.ts";
import { type Fleet, startFleet } from "../support/fleet.ts";
import { DOCUMENTED_FORWARDING_HEADERS } from "../support/forwarding-header-names.ts";
import { rawRequest } from "../support/raw-http.ts";
import { startWorkersFleet, type WorkersFleet } from "../support/workers-fleet.ts";

/**
 * The claims about the client's address, scheme, host or country that only a trusted proxy may
 * make, end to end on both entries to a worker that echoes what reached it: every name of the
 * filter (FORWARDING_HEADERS) and, written out, every name issue 40 listed and the rest
 * docs/decisions.md names, so a name dropped from the filter fails here. From an untrusted client
 * none reaches the worker (X-Forwarded-For, -Host and -Proto are Pinboard's own); from a trusted
 * proxy all pass (X-Forwarded-For is still the observed peer). Behind Cloudflare's edge (the Workers entry) CF-Visitor and CF-IPCountry
 * are the edge's own facts (the scheme, request.cf.country), never a client's or a proxy's.
 */

const NAMES = [...new Set([...FORWARDING_HEADERS, ...DOCUMENTED_FORWARDING_HEADERS].map((n) => n.toLowerCase()))];
/** What Pinboard writes itself on every forward. */
const PINBOARDS_OWN = ["x-forwarded-for", "x-forwarded-host", "x-forwarded-proto"];

const spoofed = (name: string) => `spoofed-${name}`;
const claims = () => Object.fromEntries(NAMES.map((n) => [n, spoofed(n)]));

/** The names whose client value reached the worker. */
function passed(headers: Record<string, string>): string[] {
  return NAMES.filter((n) => headers[n] === spoofed(n));
}

it("the filter holds every name issue 40 listed, the earlier ones and the rest the docs name", () => {
  expect(NAMES.filter((n) => !FORWARDING_HEADERS.includes(n))).toEqual([]);
});

describe("on the Node entry (PINBOARD_TRUSTED_PROXIES=127.0.0.2)", () => {
  let fleet: Fleet;
  beforeAll(async () => {
    fleet = await startFleet({
      workers: 1,
      namespaces: { "/echo": Echo },
      env: { PINBOARD_TRUSTED_PROXIES: "127.0.0.2" },
    });
    await fleet.skipColdStart();
  }, 60_000);
  afterAll(() => fleet?.close());

  const send = async (localAddress: string) => {
    const res = await rawRequest(`${fleet.pb.url}/echo/hdr-1`, { headers: claims(), localAddress });
    expect(res.status).toBe(200);
    return (JSON.parse(res.body) as EchoAnswer).headers;
  };

  it("from an untrusted client none reaches the worker, the CF-* claims included", async () => {
    const headers = await send("127.0.0.1");
    expect(passed(headers)).toEqual([]);
    expect(NAMES.filter((n) => headers[n] !== undefined)).toEqual(PINBOARDS_OWN);
    expect(headers["x-forwarded-for"]).toBe("127.0.0.1");
    expect(headers["x-forwarded-host"]).toBe(new URL(fleet.pb.url).host);
    expect(headers["x-forwarded-proto"]).toBe("http");
  });

  it("from the trusted proxy every one passes; X-Forwarded-For is the observed peer", async () => {
    const headers = await send("127.0.0.2");
    expect(passed(headers)).toEqual(NAMES.filter((n) => n !== "x-forwarded-for"));
    expect(headers["x-forwarded-for"]).toBe("127.0.0.2");
  });
});

describe("on the Workers entry in workerd (PINBOARD_TRUSTED_PROXIES=203.0.113.9)", () => {
  let fleet: WorkersFleet;
  beforeAll(async () => {
    fleet = await startWorkersFleet({
      namespaces: { "/echo": Echo },
      env: { PINBOARD_TRUSTED_PROXIES: "203.0.113.9" },
    });
  }, 60_000);
  afterAll(() => fleet?.stop());

  /** Written by Pinboard or the edge whoever sent them (CF-Connecting-IP names the peer). */
  const EDGE_OWN = ["x-forwarded-for", "cf-connecting-ip", "cf-ipcountry", "cf-visitor"];

  /** CF-Visitor is the request's scheme; CF-IPCountry is workerd's request.cf.country. */
  function expectEdgeOwn(headers: Record<string, string>): void {
    expect(headers["cf-visitor"]).toBe('{"scheme":"http"}');
    expect(headers["cf-ipcountry"]).toMatch(/^[A-Z][A-Z0-9]$/);
  }

  /** The peer is CF-Connecting-IP, which Cloudflare's edge writes (the test plays the edge). */
  const send = async (peer: string) => {
    const res = await fetch(`${fleet.entry.url}/echo/hdr-1`, { headers: { ...claims(), "cf-connecting-ip": peer } });
    expect(res.status).toBe(200);
    return ((await res.json()) as EchoAnswer).headers;
  };

  it("from an untrusted client none reaches the worker; CF-Visitor and CF-IPCountry are the edge's", async () => {
    const headers = await send("198.51.100.1");
    expect(passed(headers)).toEqual([]);
    expect(headers["x-forwarded-for"]).toBe("198.51.100.1");
    expect(headers["cf-connecting-ip"]).toBeUndefined();
    expectEdgeOwn(headers);
  });

  it("from the trusted proxy every one passes; X-Forwarded-For is the peer", async () => {
    const headers = await send("203.0.113.9");
    expect(passed(headers)).toEqual(NAMES.filter((n) => !EDGE_OWN.includes(n)));
    expectEdgeOwn(headers);
    expect(headers["x-forwarded-for"]).toBe("203.0.113.9");
    // The peer's own CF-Connecting-IP (the edge's, naming the client): workerd's fetch never sends
    // one on a subrequest, as Cloudflare's does not.
    expect(headers["cf-connecting-ip"]).toBeUndefined();
  });
});
