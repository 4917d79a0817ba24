import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Keys, SINGLE_HOSTNAME } from "../../src/redis/keys.ts";
import { type PinboardProcess, startPinboardProcess } from "../support/pinboard-process.ts";
import { endColdStart, startTestRedis, type TestRedis } from "../support/redis.ts";
import { HttpRegistration } from "../support/register-over-http.ts";
import { getRow } from "../support/rows.ts";

/**
 * In-band refusal: "answers with that refusal's string on a refusal from the re-resolve, 404
 * {"error":"unknown namespace"} when the namespace vanished meanwhile."
 *
 * A worker that is leaving (a real HTTP server on loopback, registered through the real
 * registry of the real Node entry) is the only worker of its namespace. When a forward reaches
 * it, it deregisters (which removes it from every namespace list: the lists, left empty, are
 * gone in every bucket) and then refuses the activation with 503 + Pinned-Refusal:
 * lease-unhealthy. The request is body-less, so Pinboard releases the placement, counts a nack
 * and re-resolves excluding that session: the namespace has vanished meanwhile.
 */

const keys = new Keys("pinboard:", 16);

interface LeavingWorker {
  url: string;
  sessionId: string;
  /** Every data-plane request it received (the challenge probe aside). */
  readonly seen: Array<{ method: string; url: string; epoch: string | undefined }>;
  /** The status of each deregister it sent before refusing. */
  readonly deregistered: number[];
  close(): Promise<void>;
}

async function startLeavingWorker(pinboardUrl: string, token: string, namespace: string): Promise<LeavingWorker> {
  const registration = new HttpRegistration("leaving");
  const seen: LeavingWorker["seen"] = [];
  const deregistered: number[] = [];
  let sessionId = "";
  const deregister = () =>
    fetch(`${pinboardUrl}/registry/deregister`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify({ sessionId }),
    }).then(async (res) => {
      await res.arrayBuffer();
      return res.status;
    });
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? "/", "http://worker");
    if (registration.answerHttp(url, req, res)) return;
    seen.push({
      method: req.method ?? "",
      url: req.url ?? "",
      epoch: req.headers["pinboard-epoch"] as string | undefined,
    });
    void deregister().then((status) => {
      deregistered.push(status);
      res
        .writeHead(503, { "content-type": "application/json", "retry-after": "1", "pinned-refusal": "lease-unhealthy" })
        .end(JSON.stringify({ detail: "worker is leaving" }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  sessionId = await registration.register(pinboardUrl, token, namespace, url);

  return {
    url,
    sessionId,
    seen,
    deregistered,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

let t: TestRedis, pb: PinboardProcess, leaving: LeavingWorker;

beforeAll(async () => {
  t = await startTestRedis();
  pb = await startPinboardProcess({ redis: t });
  await endColdStart(t, keys);
  leaving = await startLeavingWorker(pb.url, await pb.workerCredential(), "/vanish");
});
afterAll(async () => {
  await leaving?.close();
  await pb?.stop();
  await t?.stop();
});

async function resolutions(): Promise<Record<string, number>> {
  const res = await fetch(`${pb.url}/registry/health`, {
    headers: { authorization: `Bearer ${await pb.operatorCredential()}` },
  });
  expect(res.status).toBe(200);
  return ((await res.json()) as { resolutions: Record<string, number> }).resolutions;
}

describe("a refusal whose re-resolve finds the namespace gone", () => {
  it("answers 404 unknown namespace; the placement is released and one nack counted", async () => {
    for (const b of keys.allBuckets()) {
      expect(await t.redis.client.hexists(keys.nsWorkers(b, SINGLE_HOSTNAME, "/vanish"), leaving.sessionId)).toBe(1);
    }
    const before = await resolutions();

    const res = await fetch(`${pb.url}/vanish/v1`);
    expect(res.status).toBe(404);
    expect(res.headers.get("content-type")).toMatch(/^application\/json/);
    expect(res.headers.get("pinned-refusal")).toBeNull();
    expect(await res.json()).toEqual({ error: "unknown namespace" });

    // The forward reached the worker once, with the epoch of the placement made for it; the worker
    // had left (deregister answered 200) before it refused.
    expect(leaving.seen).toHaveLength(1);
    expect(leaving.seen[0]).toMatchObject({ method: "GET", url: "/vanish/v1", epoch: expect.stringMatching(/^\d+$/) });
    expect(leaving.deregistered).toEqual([200]);
    // The namespace is gone from every bucket, and the refused placement was released.
    for (const b of keys.allBuckets())
      expect(await t.redis.client.exists(keys.nsWorkers(b, SINGLE_HOSTNAME, "/vanish"))).toBe(0);
    expect(await getRow(t, "/vanish", "v1")).toBeNull();

    const after = await resolutions();
    expect((after.nack ?? 0) - (before.nack ?? 0)).toBe(1);
    expect((after["unknown-ns"] ?? 0) - (before["unknown-ns"] ?? 0)).toBe(1);
    expect((after.forward ?? 0) - (before.forward ?? 0)).toBe(0);
  });

  it("the namespace stays unknown for the next request, which reaches no worker", async () => {
    const res = await fetch(`${pb.url}/vanish/v2`);
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({ error: "unknown namespace" });
    expect(leaving.seen).toHaveLength(1);
  });
});
