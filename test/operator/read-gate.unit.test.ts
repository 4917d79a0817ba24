import { describe, expect, it } from "vitest";
import { PinboardError } from "../../src/errors/pinboard-error.ts";
import { ReadGate } from "../../src/operator/read-gate.ts";

/** A read that finishes when the test says so. */
function heldRead<T>(value: T) {
  let finish!: () => void;
  let started = false;
  const done = new Promise<void>((resolve) => {
    finish = resolve;
  });
  const read = async () => {
    started = true;
    await done;
    return value;
  };
  return { read, finish, started: () => started };
}

const turn = () => new Promise((resolve) => setImmediate(resolve));

describe("ReadGate", () => {
  it("runs `limit` reads at once; the others start in arrival order as slots free", async () => {
    const gate = new ReadGate(2, 10, "busy");
    const reads = [1, 2, 3, 4].map((n) => heldRead(n));
    const results = reads.map((r) => gate.run(r.read));
    await turn();
    expect(reads.map((r) => r.started())).toEqual([true, true, false, false]);
    expect(gate.load).toEqual({ running: 2, waiting: 2 });

    reads[1]!.finish();
    await turn();
    expect(reads.map((r) => r.started())).toEqual([true, true, true, false]);
    expect(gate.load).toEqual({ running: 2, waiting: 1 });

    reads[0]!.finish();
    reads[2]!.finish();
    await turn();
    expect(reads[3]!.started()).toBe(true);
    expect(gate.load).toEqual({ running: 1, waiting: 0 });
    reads[3]!.finish();
    expect(await Promise.all(results)).toEqual([1, 2, 3, 4]);
    expect(gate.load).toEqual({ running: 0, waiting: 0 });
  });

  it("refuses a read past `maxWaiting` with a 503 refusal, Retry-After 1, and runs nothing for it", async () => {
    const gate = new ReadGate(1, 1, "audit reads busy, retry");
    const first = heldRead("a");
    const second = heldRead("b");
    const third = heldRead("c");
    const running = gate.run(first.read);
    const waiting = gate.run(second.read);
    const refused = await gate.run(third.read).catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(PinboardError);
    const err = refused as PinboardError;
    expect(err.status).toBe(503);
    expect(err.body).toEqual({ error: "audit reads busy, retry" });
    expect(err.headers).toEqual({ "Retry-After": "1" });
    expect(third.started()).toBe(false);
    first.finish();
    second.finish();
    expect([await running, await waiting]).toEqual(["a", "b"]);
  });

  it("frees the slot when a read fails", async () => {
    const gate = new ReadGate(1, 0, "busy");
    await expect(gate.run(() => Promise.reject(new Error("redis down")))).rejects.toThrow("redis down");
    expect(gate.load).toEqual({ running: 0, waiting: 0 });
    expect(await gate.run(async () => "next")).toBe("next");
  });
});
