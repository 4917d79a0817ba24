import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Keys, SINGLE_ENV } from "../../src/redis/keys.ts";
import { type Fleet, startFleet } from "../support/fleet.ts";
import { until } from "../support/local-worker.ts";
import { getRow, putRow } from "../support/rows.ts";
import { openSocket, rejectedUpgrade } from "../support/ws-client.ts";
import { WsProbe } from "../support/ws-instances.ts";

/**
 * "A 2xx from an HTTP forward (upgrades excluded) on an overwritten-listed id clears the marker
 * at or below the served epoch."
 *
 * The real Node entry, one worker of the worker library serving WsProbe (it accepts WebSocket
 * upgrades with a 101 and answers a plain GET with 200 {"sockets": n}), a real `ws` client.
 *
 * The marker is cleared in the background of the request. To know that an upgrade's clear would
 * have run by the time the marker is read, each upgrade is followed by a barrier: a second
 * upgrade to the same id that the worker answers 500 (no clear either way). Its resolve runs in
 * the same bucket, so it goes to Redis on the same connection as any clear the first upgrade
 * issued (which is sent synchronously when the forward is answered), and Redis runs the commands
 * of one connection in order.
 */

const keys = new Keys("pinboard:", 16);
const DEAD = "00000000deadbeef";
const NS = "/wsm";

let fleet: Fleet;
let sessionId: string;
const url = (path: string) => `${fleet.pb.url}${path}`;

beforeAll(async () => {
  fleet = await startFleet({ workers: 1, namespaces: { [NS]: WsProbe } });
  await fleet.skipColdStart();
  sessionId = fleet.workers[0]!.worker.sessionId!;
});
afterAll(() => fleet?.close());

const markerKey = async (id: string) => keys.overwritten(await keys.bucketOf(id));
const markerField = (id: string) => `${SINGLE_ENV}\n${NS}\n${id}`;
const marker = async (id: string) => fleet.t.redis.hget(await markerKey(id), markerField(id));

/**
 * An upgrade of the same id that the worker answers 500 (the worker library sends such an answer
 * to an upgrade without its body): relayed as is, and it clears nothing.
 */
async function barrier(id: string): Promise<void> {
  const refused = await rejectedUpgrade(url(`${NS}/${id}?status=500`));
  expect(refused.status).toBe(500);
  expect(refused.headers["x-probe"]).toBe("1");
  expect(refused.body).toBe("");
}

async function plainGet(id: string, sockets: number): Promise<void> {
  const res = await fetch(url(`${NS}/${id}`));
  expect(res.status).toBe(200);
  expect(await res.json()).toEqual({ sockets });
}

describe("the overwritten marker and WebSocket upgrades", () => {
  it("an upgrade answered 101 on a re-placed (overwritten-listed) id leaves the marker; a plain GET 2xx then clears it", async () => {
    const id = "ws-replaced";
    await putRow(fleet.t, NS, id, { sessionId: DEAD, epoch: "5" });

    const socket = await openSocket(url(`${NS}/${id}`));
    const hello = await socket.json<{ hello: boolean; epoch: string; aud: string }>();
    expect(hello).toMatchObject({ hello: true, aud: sessionId, epoch: expect.stringMatching(/^\d+$/) });
    expect(await getRow(fleet.t, NS, id)).toMatchObject({ sessionId, epoch: hello.epoch });
    // The dead owner's row was overwritten: the id is listed at the new epoch.
    expect(await marker(id)).toBe(hello.epoch);

    await barrier(id);
    expect(await marker(id)).toBe(hello.epoch);

    await plainGet(id, 1);
    await until(async () => (await marker(id)) === null);
    socket.ws.close(1000, "done");
    expect(await socket.closed).toEqual({ code: 1000, reason: "done" });
  });

  it("an upgrade answered 101 on a live placement whose marker is at its epoch leaves the marker; a plain GET 2xx clears it", async () => {
    const id = "ws-listed";
    await plainGet(id, 0);
    const row = await getRow(fleet.t, NS, id);
    expect(row).toMatchObject({ sessionId, epoch: expect.stringMatching(/^\d+$/) });
    expect(await marker(id)).toBeNull();
    await fleet.t.redis.client.hset(await markerKey(id), markerField(id), row!.epoch!);

    const socket = await openSocket(url(`${NS}/${id}`));
    expect(await socket.json()).toMatchObject({ hello: true, aud: sessionId, epoch: row!.epoch });
    await barrier(id);
    expect(await marker(id)).toBe(row!.epoch);

    await plainGet(id, 1);
    await until(async () => (await marker(id)) === null);
    socket.ws.close(1000, "done");
    expect(await socket.closed).toEqual({ code: 1000, reason: "done" });
  });

  it("a 2xx answer to an upgrade (the worker declined to switch) is no HTTP forward either: the marker stays", async () => {
    const id = "ws-declined";
    await putRow(fleet.t, NS, id, { sessionId: DEAD, epoch: "5" });

    const declined = await rejectedUpgrade(url(`${NS}/${id}?status=200`));
    expect(declined.status).toBe(200);
    expect(declined.headers["x-probe"]).toBe("1");
    expect(declined.body).toBe("");
    const row = await getRow(fleet.t, NS, id);
    expect(row).toMatchObject({ sessionId, epoch: expect.stringMatching(/^\d+$/) });
    expect(await marker(id)).toBe(row!.epoch);

    await barrier(id);
    expect(await marker(id)).toBe(row!.epoch);

    await plainGet(id, 0);
    await until(async () => (await marker(id)) === null);
  });
});
