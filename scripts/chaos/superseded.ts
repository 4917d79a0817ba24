/**
 * When each epoch of a key was superseded, as clients saw it: the earliest moment a client held
 * an answer on the key at a higher epoch. From then on the older epoch's owner has been replaced,
 * so nothing it does (take a socket message, fire an alarm) may happen after that moment.
 */

export interface EpochSighting {
  key: string;
  epoch: string;
  /** When the client held the answer. */
  at: number;
}

export class Supersession {
  /** Per key: each epoch seen and the first time it was seen, highest epoch first. */
  private readonly byKey = new Map<string, { epoch: bigint; first: number }[]>();

  constructor(sightings: Iterable<EpochSighting>) {
    const first = new Map<string, Map<bigint, number>>();
    for (const { key, epoch, at } of sightings) {
      const epochs = first.get(key) ?? new Map<bigint, number>();
      first.set(key, epochs);
      const e = BigInt(epoch);
      epochs.set(e, Math.min(epochs.get(e) ?? Number.POSITIVE_INFINITY, at));
    }
    for (const [key, epochs] of first)
      this.byKey.set(
        key,
        [...epochs].map(([epoch, at]) => ({ epoch, first: at })).sort((a, b) => (a.epoch < b.epoch ? 1 : -1)),
      );
  }

  /** The first time a client saw `key` at an epoch above `epoch`, and that epoch; null: never. */
  supersededAt(key: string, epoch: string): { at: number; by: string } | null {
    const e = BigInt(epoch);
    let best: { at: number; by: string } | null = null;
    for (const seen of this.byKey.get(key) ?? []) {
      if (seen.epoch <= e) break;
      if (best === null || seen.first < best.at) best = { at: seen.first, by: String(seen.epoch) };
    }
    return best;
  }
}
