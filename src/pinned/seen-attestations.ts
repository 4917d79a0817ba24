/**
 * The attestation ids (jti) a worker has accepted, each kept until its token is no longer
 * accepted anyway, so that a token is accepted once: a replay, with the same body or another,
 * is refused.
 *
 * Bounded: at most `capacity` ids. Ids are kept in buckets by the whole second their token stops
 * being accepted (its deadline, rounded up), the bucket keys in ascending order. Everything at
 * or below `floor` is refused without a look-up, and every id dropped so far lies at or below it:
 *  - as time passes, the floor follows the clock and the buckets below it go (an id there
 *    belongs to a token the time check refuses already), amortised O(1) per admission;
 *  - when an admission makes the set hold more than `capacity` ids, the earliest bucket goes
 *    whole and the floor rises to its key: the tokens expiring first are refused from then on,
 *    so forgetting an id never reopens its replay. It refuses genuine tokens only when more than
 *    `capacity` arrive within one acceptance window, and then the oldest first.
 * The floor never moves back, so a clock stepped back does not revive forgotten ids either.
 */
export class SeenAttestations {
  private readonly ids = new Set<string>();
  /** Deadline second → the ids whose tokens stop being accepted within it. */
  private readonly buckets = new Map<number, string[]>();
  /** The keys of `buckets`, ascending. */
  private keys: number[] = [];
  private floor = Number.NEGATIVE_INFINITY;

  /** `onEvict` hears each eviction, with the new floor (seconds). */
  constructor(
    private readonly capacity: number,
    private readonly onEvict?: (floor: number) => void,
  ) {}

  get size(): number {
    return this.ids.size;
  }

  /**
   * Whether the token `jti`, accepted until `deadline` (seconds), is used for the first time
   * now; it is remembered when it is. False for an id seen before, or one that may have been.
   */
  admit(jti: string, deadline: number, nowSeconds: number): boolean {
    this.raiseFloor(Math.floor(nowSeconds));
    const key = Math.ceil(deadline);
    if (key <= this.floor) return false;
    const known = this.ids.size;
    // One hash look-up: an id already there leaves the size as it was.
    if (this.ids.add(jti).size === known) return false;
    const bucket = this.buckets.get(key);
    if (bucket !== undefined) {
      bucket.push(jti);
    } else {
      this.buckets.set(key, [jti]);
      this.insertKey(key);
    }
    if (this.ids.size > this.capacity) {
      this.raiseFloor(this.keys[0]!);
      this.onEvict?.(this.floor);
    }
    return true;
  }

  /** Forgets every bucket at or below `floor`, and refuses from then on what they could hold. */
  private raiseFloor(floor: number): void {
    if (floor <= this.floor) return;
    this.floor = floor;
    let dropped = 0;
    while (dropped < this.keys.length && this.keys[dropped]! <= floor) {
      const key = this.keys[dropped++]!;
      for (const id of this.buckets.get(key)!) this.ids.delete(id);
      this.buckets.delete(key);
    }
    if (dropped > 0) this.keys = this.keys.slice(dropped);
  }

  /** Keeps `keys` ascending; a new key is nearly always the largest (deadlines follow the clock). */
  private insertKey(key: number): void {
    let at = this.keys.length;
    while (at > 0 && this.keys[at - 1]! > key) at--;
    this.keys.splice(at, 0, key);
  }
}
