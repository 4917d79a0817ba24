/**
 * The user database's fence refused only what it had to: a refusal of epoch E for a key is
 * legitimate only when a write at an epoch above E to that key was sent before the refusal came
 * back (taken, or whose outcome is unknown: it may have been taken). Anything else is a
 * "spurious-fence-refusal": a fence that refuses equal epochs, or compares the zero-padded epochs
 * as strings, refuses writes no newer epoch superseded.
 */

import type { UserDbWrite } from "./history.ts";
import { groupByKey, parseEpoch } from "./real-time.ts";
import type { ViolationLog } from "./verdict.ts";

export function checkFenceRefusals(writes: readonly UserDbWrite[], log: ViolationLog): void {
  for (const [key, entries] of groupByKey(writes)) {
    const mayHaveRaised = entries
      .filter((w) => w.accepted || w.error !== undefined)
      .map((w) => ({ write: w, epoch: parseEpoch(w.epoch), sent: w.start ?? w.at }))
      .sort((a, b) => a.sent - b.sent);
    // One violation per (worker, quoted epoch): a broken fence refuses every write of an activation.
    const spurious = new Map<string, { first: UserDbWrite; count: number }>();
    for (const refused of entries) {
      if (refused.accepted || refused.error !== undefined) continue;
      const epoch = parseEpoch(refused.epoch);
      if (epoch === undefined) continue;
      const higher = mayHaveRaised.find((w) => w.sent < refused.at && w.epoch !== undefined && w.epoch > epoch);
      if (higher !== undefined) continue;
      const seen = spurious.get(`${refused.worker}@${refused.epoch}`);
      if (seen === undefined) spurious.set(`${refused.worker}@${refused.epoch}`, { first: refused, count: 1 });
      else seen.count++;
    }
    for (const { first, count } of spurious.values()) {
      const times = count > 1 ? ` (${count} writes)` : "";
      const detail = `the user database refused worker ${first.worker}'s write of ${key} at epoch ${first.epoch} at ${first.at}${times}, but no write at a higher epoch was sent before it`;
      log.add({ kind: "spurious-fence-refusal", key, detail, workers: [first.worker], epochs: [first.epoch] });
    }
  }
}
