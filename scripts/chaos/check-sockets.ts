/**
 * The WebSocket sessions' rules (history-sockets.ts):
 *
 *  - socket-stale-delivery: an instance took a message at an epoch after a client had already
 *    seen the key answered at a higher one, or at that epoch by another worker (the old owner
 *    served past its takeover; a message
 *    sent after a socket closed and was reopened on the new owner is a case of it)
 *  - socket-duplicate-delivery: one message taken twice
 *  - socket-duplicate-answer: one message answered twice
 *  - socket-unlogged-answer: an answer for a message no instance logged (the log is written
 *    synchronously before the echo, so an answer without its line is a log that lies)
 *  - socket-epoch-regression: a session's answers (hellos and echoes, across its sockets, in the
 *    order they came) going down in epoch
 */

import type { SocketHistory } from "./history-sockets.ts";
import { type EpochSighting, Supersession } from "./superseded.ts";
import type { ViolationLog } from "./verdict.ts";

export function checkSockets(history: SocketHistory, log: ViolationLog): void {
  const supersession = new Supersession(socketSightings(history));
  const takenBy = new Map<string, SocketHistory["taken"]>();
  for (const taken of history.taken) {
    const same = takenBy.get(taken.msg) ?? [];
    takenBy.set(taken.msg, same);
    same.push(taken);
    const superseded = supersession.supersededAt(taken.key, taken.epoch, taken.worker);
    if (superseded && superseded.at < taken.at)
      log.add({
        kind: "socket-stale-delivery",
        key: taken.key,
        detail: `${taken.worker} took message ${taken.msg} at epoch ${taken.epoch} ${taken.at - superseded.at} ms after a client saw epoch ${superseded.by}`,
        workers: [taken.worker],
        epochs: [taken.epoch, superseded.by],
      });
  }
  for (const [msg, all] of takenBy)
    if (all.length > 1)
      log.add({
        kind: "socket-duplicate-delivery",
        key: all[0]!.key,
        detail: `message ${msg} taken ${all.length} times: ${all.map((t) => `${t.worker}@${t.epoch}`).join(", ")}`,
        workers: all.map((t) => t.worker),
        epochs: all.map((t) => t.epoch),
      });
  for (const m of history.messages) {
    if (m.extraAnswers)
      log.add({
        kind: "socket-duplicate-answer",
        key: m.key,
        detail: `message ${m.msg} answered ${1 + m.extraAnswers} times`,
      });
    if (m.answered !== undefined && !takenBy.has(m.msg))
      log.add({
        kind: "socket-unlogged-answer",
        key: m.key,
        detail: `message ${m.msg} answered by ${m.worker} at epoch ${m.epoch}, but no instance logged taking it`,
        ...(m.worker ? { workers: [m.worker] } : {}),
      });
  }
  checkSessionEpochs(history, log);
}

/** Every answer a socket client held: hellos and echoes. */
export function socketSightings(history: SocketHistory): EpochSighting[] {
  const sightings: EpochSighting[] = [];
  for (const e of history.events)
    if (e.kind === "open" && e.epoch !== undefined)
      sightings.push({ key: e.key, epoch: e.epoch, at: e.at, ...(e.worker ? { worker: e.worker } : {}) });
  for (const m of history.messages)
    if (m.answered !== undefined && m.epoch !== undefined)
      sightings.push({ key: m.key, epoch: m.epoch, at: m.answered });
  return sightings;
}

function checkSessionEpochs(history: SocketHistory, log: ViolationLog): void {
  const bySession = new Map<number, (EpochSighting & { what: string })[]>();
  const add = (session: number, s: EpochSighting & { what: string }) => {
    const seen = bySession.get(session) ?? [];
    bySession.set(session, seen);
    seen.push(s);
  };
  for (const e of history.events)
    if (e.kind === "open" && e.epoch !== undefined)
      add(e.session, { key: e.key, epoch: e.epoch, at: e.at, what: `socket ${e.socket}'s hello` });
  for (const m of history.messages)
    if (m.answered !== undefined && m.epoch !== undefined)
      add(m.session, { key: m.key, epoch: m.epoch, at: m.answered, what: `message ${m.msg}` });
  for (const [session, seen] of bySession) {
    let highest: (EpochSighting & { what: string }) | undefined;
    for (const s of seen.sort((a, b) => a.at - b.at)) {
      if (highest && BigInt(s.epoch) < BigInt(highest.epoch))
        log.add({
          kind: "socket-epoch-regression",
          key: s.key,
          detail: `session ${session}: ${s.what} answered at epoch ${s.epoch} after ${highest.what} at epoch ${highest.epoch}`,
          epochs: [highest.epoch, s.epoch],
        });
      if (!highest || BigInt(s.epoch) > BigInt(highest.epoch)) highest = s;
    }
  }
}
