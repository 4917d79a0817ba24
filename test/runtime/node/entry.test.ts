import { connect } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ChallengeServer, startChallengeServer } from "../../support/challenge-server.ts";
import { type PinboardProcess, startPinboardProcess } from "../../support/pinboard-process.ts";
import { usePinboardProcess } from "../../support/pinboard-process-fixture.ts";
import type { TestRedis } from "../../support/redis.ts";
import { heartbeatBody, registerBody } from "../../support/registration.ts";

let t: TestRedis;
let pb: PinboardProcess;
let worker: ChallengeServer;

usePinboardProcess({ PINBOARD_BASE_PATH: "/pb" }, (f) => ({ t, pb } = f));
beforeAll(async () => {
  worker = await startChallengeServer();
});
afterAll(async () => {
  await worker?.close();
});

const post = async (url: string, token: string, body: unknown) =>
  fetch(url, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });

describe("the Node entry as a process", () => {
  it("serves health under the base path and 404 not found outside it", async () => {
    const health = await fetch(`${pb.url}/healthz`);
    expect(await health.json()).toEqual({ ok: true });
    // Idle client connections outlive a load balancer's usual 60 s idle timeout.
    expect(health.headers.get("keep-alive")).toBe("timeout=65");
    const ready = await fetch(`${pb.url}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.text()).toBe("");
    const outside = await fetch(`http://127.0.0.1:${pb.port}/registry/register`, { method: "POST" });
    expect(outside.status).toBe(404);
    expect(await outside.json()).toEqual({ error: "not found" });
  });

  it("registers and heartbeats a real worker over HTTP", async () => {
    const token = await pb.workerCredential();
    const reg = await post(`${pb.url}/registry/register`, token, registerBody(worker));
    expect(reg.status).toBe(200);
    const { sessionId } = (await reg.json()) as { sessionId: string };
    const hb = await post(`${pb.url}/registry/heartbeat`, token, heartbeatBody(worker, sessionId));
    expect(hb.status).toBe(200);
    expect(await hb.json()).toEqual({ expiresInMs: 15000, draining: false });
  });

  it("answers a refused upload at once and closes its connection instead of waiting for the rest", async () => {
    // 1 MB announced, 1 KB sent: the refusal must not wait for the body, and the connection,
    // whose remaining bytes Pinboard will never read, is closed after it.
    const { head, closed } = await new Promise<{ head: string; closed: boolean }>((resolve, reject) => {
      const socket = connect(pb.port, "127.0.0.1");
      let received = "";
      socket.on("error", reject);
      socket.on("data", (d: Buffer) => (received += d.toString("latin1")));
      socket.on("close", () => resolve({ head: received.slice(0, received.indexOf("\r\n\r\n")), closed: true }));
      socket.write(
        `POST /pb/nowhere/x HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1000000\r\n\r\n${"x".repeat(1024)}`,
      );
    });
    expect(closed).toBe(true);
    expect(head).toMatch(/^HTTP\/1\.1 404 /);
    expect(head.toLowerCase()).toContain("connection: close");
  });

  it("stops on SIGTERM and stops answering", async () => {
    const other = await startPinboardProcess({ redis: t });
    await other.stop();
    expect(other.process.exitCode).toBe(0);
    await expect(fetch(`${other.url}/healthz`)).rejects.toThrow();
  });
});
