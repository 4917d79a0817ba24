/**
 * The alarms' rules (history-alarms.ts), what the library promises (docs/worker-library.md,
 * "Alarms"): each fires at least once, from the current owner only.
 *
 *  - alarm-lost: an alarm acknowledged as set never fired, though the run waited for it after
 *    the faults healed
 *  - alarm-refired: an alarm fired again after a firing of it was committed (its removal from
 *    storage durable): whoever fires later reads storage without it, unless a fence let a stale
 *    write through or a stale owner fired from memory
 *  - alarm-split-fire: one alarm fired at one epoch by two workers
 *  - alarm-stale-fire: an alarm fired at an epoch after a client had seen the key answered at a
 *    higher one, or at that epoch by another worker (the old owner fired past its takeover)
 *
 * Two firings at one epoch by one worker are allowed: a handler whose write failed is retried,
 * at least once being the promise.
 */

import type { AlarmHistory } from "./history-alarms.ts";
import { Supersession } from "./superseded.ts";
import type { ViolationLog } from "./verdict.ts";

export function checkAlarms(history: AlarmHistory, log: ViolationLog): void {
  const fired = history.fired.filter((f) => f.phase === "fired");
  const firedIds = new Set(fired.map((f) => f.alarm));
  for (const set of history.sets)
    if (set.outcome === "ok" && !firedIds.has(set.alarm))
      log.add({
        kind: "alarm-lost",
        key: set.key,
        detail: `alarm ${set.alarm}, acknowledged by ${set.worker} at epoch ${set.epoch} and due ${new Date(set.due).toISOString()}, never fired`,
        ...(set.worker ? { workers: [set.worker] } : {}),
      });

  const committedAt = new Map<string, number>();
  for (const f of history.fired)
    if (f.phase === "committed") committedAt.set(f.alarm, Math.min(committedAt.get(f.alarm) ?? f.at, f.at));
  const firstAtEpoch = new Map<string, (typeof fired)[number]>();
  const supersession = new Supersession(
    history.sets.flatMap((s) =>
      s.outcome === "ok" && s.epoch
        ? [{ key: s.key, epoch: s.epoch, at: s.end, ...(s.worker ? { worker: s.worker } : {}) }]
        : [],
    ),
  );
  for (const f of fired) {
    const committed = committedAt.get(f.alarm);
    if (committed !== undefined && f.at > committed)
      log.add({
        kind: "alarm-refired",
        key: f.key,
        detail: `alarm ${f.alarm} fired by ${f.worker} at epoch ${f.epoch} ${f.at - committed} ms after a firing of it was committed`,
        workers: [f.worker],
        epochs: [f.epoch],
      });
    const same = firstAtEpoch.get(`${f.alarm} ${f.epoch}`);
    if (same && same.worker !== f.worker)
      log.add({
        kind: "alarm-split-fire",
        key: f.key,
        detail: `alarm ${f.alarm} fired at epoch ${f.epoch} by ${same.worker} and by ${f.worker}`,
        workers: [same.worker, f.worker],
        epochs: [f.epoch],
      });
    firstAtEpoch.set(`${f.alarm} ${f.epoch}`, same ?? f);
    const superseded = supersession.supersededAt(f.key, f.epoch, f.worker);
    if (superseded && superseded.at < f.at)
      log.add({
        kind: "alarm-stale-fire",
        key: f.key,
        detail: `${f.worker} fired alarm ${f.alarm} at epoch ${f.epoch} ${f.at - superseded.at} ms after a client saw epoch ${superseded.by}`,
        workers: [f.worker],
        epochs: [f.epoch, superseded.by],
      });
  }
}
