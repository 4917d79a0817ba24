import { describe, expect, it } from "vitest";
import { OutputGate } from "../../src/pinned/output-gate.ts";

/**
 * The output gate's rule with writes the test settles by hand: an answer waits for every write
 * before it, a failed write breaks the activation once and fails every waiting answer
 * (gates.test.ts runs the same through a worker and a real store).
 */

function deferred() {
  let resolve!: () => void;
  let reject!: (err: unknown) => void;
  const promise = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}
const tick = () => new Promise((r) => setTimeout(r, 0));

describe("OutputGate", () => {
  it("has nothing to wait for without a write in flight", () => {
    const gate = new OutputGate(() => {});
    expect(gate.confirmed()).toBeNull();
    expect(gate.writesInFlight).toBe(0);
    expect(gate.broken).toBeNull();
  });

  it("confirms once every write made so far is durable", async () => {
    const gate = new OutputGate(() => {});
    const a = deferred();
    const b = deferred();
    expect(gate.track(a.promise)).toBe(a.promise);
    gate.track(b.promise);
    expect(gate.writesInFlight).toBe(2);
    let confirmed = false;
    void gate.confirmed()?.then(() => (confirmed = true));
    a.resolve();
    await tick();
    expect(confirmed).toBe(false);
    expect(gate.writesInFlight).toBe(1);
    b.resolve();
    await tick();
    expect(confirmed).toBe(true);
    expect(gate.writesInFlight).toBe(0);
    expect(gate.confirmed()).toBeNull();
  });

  it("with allowUnconfirmed lets answers go at once, yet a failed write still breaks the activation", async () => {
    const broke: unknown[] = [];
    const gate = new OutputGate((err) => broke.push(err), false);
    const a = deferred();
    gate.track(a.promise).catch(() => {});
    expect(gate.confirmed()).toBeNull();
    a.reject(new Error("disk"));
    await tick();
    expect(broke).toEqual([new Error("disk")]);
    await expect(gate.confirmed()).rejects.toThrow("disk");
  });

  it("breaks once, on the first failed write: waiting and later answers fail with it", async () => {
    const broke: unknown[] = [];
    const gate = new OutputGate((err) => broke.push(err));
    const a = deferred();
    const b = deferred();
    const c = deferred();
    for (const d of [a, b, c]) gate.track(d.promise).catch(() => {});
    const waiting = gate.confirmed();
    waiting?.catch(() => {});
    c.resolve();
    a.reject(new Error("first"));
    b.reject(new Error("second"));
    await tick();
    expect(broke).toEqual([new Error("first")]);
    expect(gate.broken).toEqual({ error: new Error("first") });
    expect(gate.writesInFlight).toBe(0);
    await expect(waiting).rejects.toThrow("first");
    await expect(gate.confirmed()).rejects.toThrow("first");
  });
});
