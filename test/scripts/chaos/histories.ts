import type { Fault, History, Operation, Served, UserDbWrite } from "../../../scripts/chaos/history.ts";

/** Small hand-made histories for the checker's tests: defaults for everything a test does not name. */

export function history(parts: Partial<History>): History {
  return {
    operations: [],
    faults: [],
    served: [],
    userDb: [],
    finalReads: {},
    leaseTtlMs: 1000,
    started: 0,
    ended: 10_000,
    ...parts,
  };
}

type OpFields = Partial<Operation> & Pick<Operation, "id" | "start" | "end">;

export function append(value: string, fields: OpFields): Operation {
  return { key: "/lists/a", kind: "append", value, node: 0, outcome: "ok", worker: "w1", epoch: "1", ...fields };
}

export function read(list: string[], fields: OpFields): Operation {
  return { key: "/lists/a", kind: "read", list, node: 1, outcome: "ok", worker: "w1", epoch: "1", ...fields };
}

export function incr(counter: number | undefined, fields: OpFields): Operation {
  return {
    key: "/counters/c",
    kind: "incr",
    ...(counter === undefined ? {} : { counter }),
    node: 0,
    outcome: "ok",
    worker: "w1",
    epoch: "1",
    ...fields,
  };
}

export function served(worker: string, epoch: string, at: number, key = "/lists/a"): Served {
  return { worker, key, epoch, at, kind: "append" };
}

export function userDbWrite(worker: string, epoch: string, at: number, accepted: boolean): UserDbWrite {
  return { worker, key: "/lists/a", epoch, at, accepted };
}

export function killWorker(target: string, start: number, keys: string[]): Fault {
  return { kind: "kill-worker", target, start, healed: start + 500, keys };
}

/**
 * A run with no anomaly: a list with concurrent appends and reads, a refused and an indeterminate
 * append left out, a counter with an indeterminate increment that did take effect, a failover from
 * w1 to w2 (epoch 1 to 2) after w1 was killed, and the user database refusing w1's late write.
 */
export function cleanHistory(): History {
  return history({
    operations: [
      append("v1", { id: 1, start: 0, end: 10 }),
      read([], { id: 2, start: 5, end: 8 }),
      append("v2", { id: 3, start: 20, end: 30 }),
      read(["v1"], { id: 4, start: 15, end: 25 }),
      append("v3", { id: 5, start: 40, end: 50, outcome: "info" }),
      append("v4", { id: 6, start: 41, end: 51, outcome: "fail", worker: undefined, epoch: undefined }),
      read(["v1", "v2"], { id: 7, start: 45, end: 55 }),
      append("v5", { id: 8, start: 1200, end: 1400, worker: "w2", epoch: "2" }),
      read(["v1", "v2", "v3", "v5"], { id: 9, start: 1500, end: 1510, worker: "w2", epoch: "2" }),
      incr(1, { id: 10, start: 0, end: 10 }),
      incr(2, { id: 11, start: 20, end: 30 }),
      incr(undefined, { id: 12, start: 40, end: 50, outcome: "info" }),
      incr(4, { id: 13, start: 60, end: 70, worker: "w2", epoch: "2" }),
      { ...incr(4, { id: 14, start: 80, end: 90, worker: "w2", epoch: "2" }), kind: "read" },
    ],
    faults: [killWorker("w1", 1000, ["/lists/a"])],
    served: [served("w1", "1", 5), served("w1", "1", 25), served("w2", "2", 1300), served("w2", "2", 1505)],
    userDb: [userDbWrite("w1", "1", 5, true), userDbWrite("w2", "2", 1300, true), userDbWrite("w1", "1", 1350, false)],
    finalReads: { "/lists/a": ["v1", "v2", "v3", "v5"] },
  });
}
