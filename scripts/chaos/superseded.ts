/**
 * When each owner of a key was superseded, as clients saw it: the earliest moment a client held
 * an answer on the key at a higher epoch, or at the same epoch from another worker (two owners
 * at one epoch: a takeover that did not bump it). From then on the owner has been replaced, so
 * nothing it does (take a socket message, fire an alarm) may happen after that moment.
 */

export interface EpochSighting {
  key: string;
  epoch: string;
  /** The worker that answered, when known. */
  worker?: string;
  /** When the client held the answer. */
  at: number;
}

interface FirstSeen {
  epoch: bigint;
  worker: string | undefined;
  first: number;
}

export class Supersession {
  /** Per key: each (epoch, worker) seen and the first time it was seen, highest epoch first. */
  private readonly byKey = new Map<string, FirstSeen[]>();

  constructor(sightings: Iterable<EpochSighting>) {
    const first = new Map<string, Map<string, FirstSeen>>();
    for (const { key, epoch, worker, at } of sightings) {
      const seen = first.get(key) ?? new Map<string, FirstSeen>();
      first.set(key, seen);
      const id = `${epoch} ${worker ?? ""}`;
      const earlier = seen.get(id);
      if (!earlier || at < earlier.first) seen.set(id, { epoch: BigInt(epoch), worker, first: at });
    }
    for (const [key, seen] of first)
      this.byKey.set(
        key,
        [...seen.values()].sort((a, b) => (a.epoch < b.epoch ? 1 : a.epoch > b.epoch ? -1 : 0)),
      );
  }

  /**
   * The first time a client saw `key` answered at an epoch above `epoch`, or at `epoch` by a
   * worker other than `worker`; and that epoch and worker. Null: never.
   */
  supersededAt(key: string, epoch: string, worker: string): { at: number; by: string } | null {
    const e = BigInt(epoch);
    let best: { at: number; by: string } | null = null;
    for (const seen of this.byKey.get(key) ?? []) {
      if (seen.epoch < e) break;
      if (seen.epoch === e && (seen.worker === undefined || seen.worker === worker)) continue;
      if (best === null || seen.first < best.at)
        best = { at: seen.first, by: `${seen.epoch}${seen.worker ? ` (${seen.worker})` : ""}` };
    }
    return best;
  }
}
