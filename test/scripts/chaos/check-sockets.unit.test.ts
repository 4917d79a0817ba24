import { describe, expect, it } from "vitest";
import { checkSockets } from "../../../scripts/chaos/check-sockets.ts";
import { checkHistory } from "../../../scripts/chaos/checker.ts";
import type { SocketEvent, SocketHistory, SocketMessage, SocketTaken } from "../../../scripts/chaos/history-sockets.ts";
import { type ViolationKind, ViolationLog } from "../../../scripts/chaos/verdict.ts";
import { cleanHistory } from "./histories.ts";

/**
 * The WebSocket sessions' checks on small hand-made histories: a clean one passes, and each
 * anomaly trips exactly its check.
 */

const KEY = "/sockets/s0";

function open(session: number, socket: number, epoch: string, worker: string, at: number): SocketEvent {
  return { session, socket, key: KEY, node: 0, kind: "open", at, epoch, worker };
}

function message(
  session: number,
  socket: number,
  n: number,
  sent: number,
  answer?: [string, string, number],
): SocketMessage {
  const m: SocketMessage = { msg: `${session}:${n}`, session, socket, key: KEY, node: 0, sent };
  if (answer) Object.assign(m, { epoch: answer[0], worker: answer[1], answered: answer[2] });
  return m;
}

function taken(msg: string, epoch: string, worker: string, at: number): SocketTaken {
  return { worker, key: KEY, epoch, msg, at };
}

/**
 * Two sessions on one key. w1 owns it at epoch 10 until it is taken over: session 1's socket is
 * closed, it reopens on w2 at epoch 20 (hello at 200); session 0's message 0:1 waits on w1 and is
 * never answered.
 */
function clean(): SocketHistory {
  return {
    events: [
      open(0, 0, "10", "w1", 10),
      open(1, 0, "10", "w1", 12),
      { session: 1, socket: 0, key: KEY, node: 0, kind: "closed", at: 150, code: 1012 },
      open(1, 1, "20", "w2", 200),
    ],
    messages: [
      message(0, 0, 0, 20, ["10", "w1", 25]),
      message(0, 0, 1, 30),
      message(1, 0, 0, 40, ["10", "w1", 45]),
      message(1, 1, 1, 210, ["20", "w2", 215]),
    ],
    taken: [taken("0:0", "10", "w1", 22), taken("1:0", "10", "w1", 42), taken("1:1", "20", "w2", 212)],
  };
}

function kindsOf(history: SocketHistory): ViolationKind[] {
  const log = new ViolationLog();
  checkSockets(history, log);
  return log.kept.map((v) => v.kind);
}

describe("checkSockets", () => {
  it("passes a clean history, through checkHistory too", () => {
    expect(kindsOf(clean())).toEqual([]);
    expect(checkHistory({ ...cleanHistory(), sockets: clean() }).valid).toBe(true);
  });

  it("reports a message the old owner took after a client saw the new epoch", () => {
    const h = clean();
    h.taken.push(taken("0:1", "10", "w1", 230)); // a zombie w1 woke and took it at 230 > 200
    const log = new ViolationLog();
    checkSockets(h, log);
    expect(log.kept.map((v) => v.kind)).toEqual(["socket-stale-delivery"]);
    expect(log.kept[0]!.detail).toContain("w1 took message 0:1 at epoch 10 30 ms after a client saw epoch 20");
    expect(checkHistory({ ...cleanHistory(), sockets: h }).violationCounts).toEqual({ "socket-stale-delivery": 1 });
  });

  it("reports a message taken at an epoch after a client saw another worker answer at it", () => {
    const h = clean();
    h.taken.push(taken("0:1", "20", "w3", 201)); // a takeover that did not bump the epoch
    const log = new ViolationLog();
    checkSockets(h, log);
    expect(log.kept.map((v) => v.kind)).toEqual(["socket-stale-delivery"]);
    expect(log.kept[0]!.detail).toContain("after a client saw epoch 20 (w2)");
  });

  it("lets the old owner take a message before anyone saw the new epoch", () => {
    const h = clean();
    h.taken.push(taken("0:1", "10", "w1", 199));
    expect(kindsOf(h)).toEqual([]);
  });

  it("reports a message taken twice", () => {
    const h = clean();
    h.taken.push(taken("1:1", "20", "w2", 213));
    expect(kindsOf(h)).toEqual(["socket-duplicate-delivery"]);
  });

  it("reports a message answered twice", () => {
    const h = clean();
    h.messages[0]!.extraAnswers = 1;
    expect(kindsOf(h)).toEqual(["socket-duplicate-answer"]);
  });

  it("reports an answer no instance logged", () => {
    const h = clean();
    h.taken.shift();
    expect(kindsOf(h)).toEqual(["socket-unlogged-answer"]);
  });

  it("reports a session whose answers go down in epoch, across its sockets", () => {
    const h = clean();
    // Session 1's third socket answered by w1 at epoch 10 after its second saw 20 (w1 logged it
    // before anyone saw 20, so only the session's order is wrong).
    h.events.push(open(1, 2, "10", "w1", 300));
    h.messages.push(message(1, 2, 2, 150, ["10", "w1", 310]));
    h.taken.push(taken("1:2", "10", "w1", 160));
    expect(kindsOf(h)).toEqual(["socket-epoch-regression", "socket-epoch-regression"]);
  });
});
