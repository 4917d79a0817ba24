import { request as httpRequest } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { verifyAttestation } from "../../src/contract/attestation.ts";
import type { Instance } from "../../src/pinned/index.ts";
import { Echo, type EchoAnswer, GZIP_TEXT } from "../support/echo-instance.ts";
import { type Fleet, startFleet } from "../support/fleet.ts";
import { rawRequest } from "../support/raw-http.ts";
import { getRow } from "../support/rows.ts";

/** Paths whose request reached the worker, and those it saw aborted before it answered. */
const arrivedAtWorker: string[] = [];
const abortedAtWorker: string[] = [];

/** Holds every request for 10 s unless it is aborted first. */
class Hold implements Instance {
  fetch(request: Request): Promise<Response> {
    arrivedAtWorker.push(new URL(request.url).pathname);
    return new Promise((resolve) => {
      const timer = setTimeout(() => resolve(new Response("held")), 10_000);
      request.signal.addEventListener(
        "abort",
        () => {
          clearTimeout(timer);
          abortedAtWorker.push(new URL(request.url).pathname);
          resolve(new Response(null, { status: 204 }));
        },
        { once: true },
      );
    });
  }
}

let fleet: Fleet;
beforeAll(async () => {
  fleet = await startFleet({ workers: 1, namespaces: { "/echo": Echo, "/hold": Hold } });
  await fleet.skipColdStart();
});
afterAll(() => fleet.close());

const url = (path: string) => `${fleet.pb.url}${path}`;

describe("forwarding", () => {
  it("forwards to the owner with an attestation and the epoch, and keeps the placement", async () => {
    const res = await fetch(url("/echo/doc-1/some/path?x=1&y=2"), { headers: { "x-custom": "kept" } });
    expect(res.status).toBe(200);
    const body = (await res.json()) as EchoAnswer;
    expect(body.path).toBe("/some/path");
    expect(body.query).toBe("?x=1&y=2");
    expect(body.headers["x-custom"]).toBe("kept");
    expect(body.headers["pinboard-epoch"]).toMatch(/^\d+$/);
    expect(body.epoch).toBe(body.headers["pinboard-epoch"]);
    const worker = fleet.workers[0]!.worker;
    const attestation = body.headers["pinboard-attestation"] ?? "";
    const claims = await verifyAttestation(attestation, worker.secret, worker.sessionId!);
    // The attestation names this forward: its method, its target at the worker, its epoch.
    const iat = claims!.iat;
    expect(claims).toEqual({
      aud: worker.sessionId,
      iat,
      exp: iat + 30,
      jti: expect.stringMatching(/^[A-Za-z0-9_-]{22}$/),
      htm: "GET",
      htu: "/echo/doc-1/some/path?x=1&y=2",
      epoch: body.epoch,
    });
    const header: unknown = JSON.parse(atob(attestation.split(".")[0]!.replace(/-/g, "+").replace(/_/g, "/")));
    expect(header).toEqual({ alg: "HS256", typ: "pinboard+jwt" });

    const again = (await (await fetch(url("/echo/doc-1"))).json()) as EchoAnswer;
    expect(again.epoch).toBe(body.epoch);
    expect(again.hits).toBe(2);
  });

  it("strips inbound Pinboard-* headers, replaces X-Forwarded-For and drops hop-by-hop headers both ways", async () => {
    const res = await rawRequest(url("/echo/doc-2"), {
      headers: {
        "pinboard-attestation": "forged",
        "pinboard-epoch": "1",
        "pinboard-anything": "x",
        "x-forwarded-for": "6.6.6.6",
        "x-forwarded-host": "evil.example",
        "x-forwarded-proto": "gopher",
        forwarded: "for=6.6.6.6;host=evil.example",
        "x-real-ip": "6.6.6.6",
        pinboard_epoch: "1",
        Pinboard_Attestation: "forged",
        x_forwarded_for: "6.6.6.6",
        connection: "x-secret-hop",
        "x-secret-hop": "1",
      },
    });
    const body = JSON.parse(res.body) as EchoAnswer;
    // The forwarding headers are Pinboard's to set (the peer is no trusted proxy), and
    // underscore spellings, which CGI-style workers read as the dashed name, never pass.
    expect(body.headers["x-forwarded-host"]).toBe(new URL(fleet.pb.url).host);
    expect(body.headers["x-forwarded-proto"]).toBe("http");
    expect(body.headers.forwarded).toBeUndefined();
    expect(body.headers["x-real-ip"]).toBeUndefined();
    expect(Object.keys(body.headers).filter((name) => name.includes("_"))).toEqual([]);
    expect(body.headers["pinboard-anything"]).toBeUndefined();
    expect(body.headers["pinboard-attestation"]).not.toBe("forged");
    expect(body.headers["pinboard-epoch"]).not.toBe("1");
    expect(body.headers["x-forwarded-for"]).toBe("127.0.0.1");
    expect(body.headers["x-secret-hop"]).toBeUndefined();
    expect(res.headers["x-echo"]).toBe("1");
    expect(res.headers["x-accel-buffering"]).toBe("no");
    expect(res.headers["pinboard-secret-leak"]).toBeUndefined();
    expect(res.headers["x-hop"]).toBeUndefined();
  });

  it("relays statuses and never follows a worker's redirect", async () => {
    expect((await fetch(url("/echo/doc-3?status=418"))).status).toBe(418);
    const res = await fetch(url("/echo/doc-3?redirect=1"), { redirect: "manual" });
    expect(res.status).toBe(302);
    expect(res.headers.get("location")).toBe("http://127.0.0.1:1/elsewhere");
  });

  it("passes a compressed answer through with its Content-Encoding (the Node transport does not decode)", async () => {
    const res = await fetch(url("/echo/doc-gz/gzip"));
    expect(res.status).toBe(200);
    expect(res.headers.get("content-encoding")).toBe("gzip");
    expect(res.headers.get("x-accel-buffering")).toBe("no");
    expect(await res.text()).toBe(GZIP_TEXT);
  });

  it("answers the spec's routing errors", async () => {
    const unknown = await fetch(url("/nowhere/doc"));
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toEqual({ error: "unknown namespace" });
    const noId = await fetch(url("/echo"));
    expect(noId.status).toBe(404);
    for (const bad of ["/echo/", "/echo/bad%20id", `/echo/${"a".repeat(257)}`, "/echo/a*b"]) {
      const res = await fetch(url(bad));
      expect(res.status).toBe(400);
      expect(res.headers.get("content-type")).toMatch(/^text\/plain/);
    }
    expect((await fetch(url(`/echo/${"a".repeat(256)}`))).status).toBe(200);
  });

  it("ends the forward when the client goes away first, and keeps the fresh placement the worker got", async () => {
    const req = httpRequest(url("/hold/leaver-1"));
    req.on("error", () => {});
    req.end();
    // Leave once the forward is under way (leaving earlier ends it before it starts).
    await expect.poll(() => arrivedAtWorker.some((p) => p.endsWith("/hold/leaver-1"))).toBe(true);
    const placed = await getRow(fleet.t, "/hold", "leaver-1");
    expect(placed).not.toBeNull();
    req.destroy();
    await expect.poll(() => abortedAtWorker.some((p) => p.endsWith("/hold/leaver-1"))).toBe(true);
    // The worker has the request and may hold the instance at that epoch: released, the next
    // request would place it elsewhere beside that activation.
    await new Promise((r) => setTimeout(r, 200));
    expect(await getRow(fleet.t, "/hold", "leaver-1")).toEqual(placed);
  });
});
