import { describe, expect, it } from "vitest";
import { ChallengeState, randomToken } from "../../src/pinned/challenge.ts";
import { type ControlMessage, MessageLedger } from "../../src/pinned/control-messages.ts";

/**
 * The worker's registration challenge (only the current challenge is answered) and its control
 * message ledger (each message handed over once, acked until a heartbeat carrying the ack
 * succeeded, remembered ten minutes after that).
 */

describe("ChallengeState", () => {
  it("answers the current challenge's value only", () => {
    const state = new ChallengeState();
    expect(state.current).toBeNull();
    expect(state.answer("x")).toBeNull();
    const first = state.rotate();
    expect(state.current).toBe(first);
    expect(state.answer(first.challenge)).toBe(first.challengeValue);
    expect(state.answer(undefined)).toBeNull();
    expect(state.answer(`${first.challenge}x`)).toBeNull();
    const second = state.rotate();
    expect(state.answer(first.challenge)).toBeNull();
    expect(state.answer(second.challenge)).toBe(second.challengeValue);
  });

  it("mints random base64url tokens: 16 bytes for the challenge, 24 for its value", () => {
    const { challenge, challengeValue } = new ChallengeState().rotate();
    expect(challenge).toMatch(/^[A-Za-z0-9_-]{22}$/);
    expect(challengeValue).toMatch(/^[A-Za-z0-9_-]{32}$/);
    expect(randomToken(9)).toMatch(/^[A-Za-z0-9_-]{12}$/);
    expect(new Set(Array.from({ length: 50 }, () => randomToken(16))).size).toBe(50);
  });
});

describe("MessageLedger", () => {
  const message = (msgId: string | number, extra: Partial<ControlMessage> = {}): ControlMessage => ({
    msgId,
    type: "evict",
    ns: "/a",
    id: "1",
    deadline: 5,
    ...extra,
  });

  it("hands each message over once and acks it until a heartbeat with the ack succeeded", () => {
    const ledger = new MessageLedger();
    expect(ledger.receive([message(1), message("m2", { deadline: null })], 0)).toEqual([
      message(1),
      message("m2", { deadline: null }),
    ]);
    expect(ledger.acks()).toEqual([1, "m2"]);
    // Re-delivered until acked: not handed over again, still acked.
    expect(ledger.receive([message(1)], 1000)).toEqual([]);
    ledger.acked([1]);
    expect(ledger.acks()).toEqual(["m2"]);
    // A number and its string are one msgId.
    ledger.acked(["m2"]);
    expect(ledger.acks()).toEqual([]);
    expect(ledger.receive([message("1")], 2000)).toEqual([]);
    expect(ledger.acks()).toEqual(["1"]);
  });

  it("takes only well-formed messages out of whatever was delivered", () => {
    const ledger = new MessageLedger();
    expect(ledger.receive("nope", 0)).toEqual([]);
    expect(ledger.receive(null, 0)).toEqual([]);
    const malformed = [
      null,
      "m",
      { ...message(1), ns: 1 },
      { ...message(2), id: null },
      { ...message(3), msgId: true },
      { ...message(4), msgId: undefined },
      { ...message(5), type: undefined },
      { ...message(6), deadline: "5" },
      { ...message(7), deadline: undefined },
    ];
    expect(ledger.receive(malformed, 0)).toEqual([]);
    expect(ledger.acks()).toEqual([]);
  });

  it("forgets an acked message ten minutes after it was first seen, not before; a pending one never", () => {
    const ledger = new MessageLedger();
    ledger.receive([message(1), message(2)], 0);
    ledger.acked([1]);
    ledger.receive([], 600_000);
    expect(ledger.receive([message(1)], 600_000)).toEqual([]); // exactly ten minutes: still known
    ledger.acked([1, 2]);
    ledger.receive([], 600_001);
    // Message 1 was forgotten, 2 was pending until just now: seen at 0, also past ten minutes.
    expect(ledger.receive([message(1)], 600_002)).toEqual([message(1)]);
    // Counted from when it was seen: seen at 5000, known until 605000.
    const late = new MessageLedger();
    late.receive([message(4)], 5000);
    late.acked([4]);
    late.receive([], 605_000);
    expect(late.receive([message(4)], 605_000)).toEqual([]);
    late.acked([4]);
    late.receive([], 605_001);
    expect(late.receive([message(4)], 605_001)).toEqual([message(4)]);
    const pending = new MessageLedger();
    pending.receive([message(3)], 0);
    pending.receive([], 700_000);
    expect(pending.receive([message(3)], 700_001)).toEqual([]);
  });

  it("clear() starts a new session's ledger", () => {
    const ledger = new MessageLedger();
    ledger.receive([message(1)], 0);
    ledger.clear();
    expect(ledger.acks()).toEqual([]);
    expect(ledger.receive([message(1)], 1)).toEqual([message(1)]);
  });
});
