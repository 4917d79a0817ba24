/**
 * The four protection layers a chaos run can switch on and off, one switch each (`--layers`,
 * passed to the workers as CHAOS_LAYERS):
 *
 *   store-fence  the durability store's epoch fence (off: every write quotes the stored epoch)
 *   user-fence   FencedRedis on the user database (off: a plain RPUSH)
 *   is-current   the chaos worker's own owner check before it answers a read: the activation is
 *                not retired and the worker's lease has not lapsed (the lapse is read from the
 *                lease itself, so it holds with lease-guard off)
 *   lease-guard  the library refusing every request once its lease view lapsed
 *                (Lease.prototype.lapsed; off: it always says false, which also takes the lapse
 *                out of LiveInstance.isCurrent, the library's input-gate re-check)
 *
 * The control run (`--control`) keeps none.
 */

export const LAYERS = ["store-fence", "user-fence", "is-current", "lease-guard"] as const;
export type Layer = (typeof LAYERS)[number];

/** One refusal by one layer, as a worker logged it (LAYER_LOG). */
export interface LayerRefusal {
  worker: string;
  layer: Layer;
  key?: string;
  epoch?: string;
  at: number;
}

/** "a,b" → the layers named; throws on an unknown name. "" or "none" → none. */
export function parseLayers(text: string): Layer[] {
  if (text === "" || text === "none") return [];
  const names = text.split(",").map((name) => name.trim());
  for (const name of names)
    if (!(LAYERS as readonly string[]).includes(name))
      throw new Error(`unknown layer ${name} (the layers: ${LAYERS.join(", ")})`);
  return LAYERS.filter((layer) => names.includes(layer));
}

/**
 * Violations that only some layers prevent: with every one of them off (a partial --layers run),
 * such a violation is what that run expects to see, reported but not failing it. A zombie's read
 * from memory, a WebSocket message it takes and an alarm it fires before any write are fenced by
 * nothing (no store sees them); a stale user-database write only by its fence.
 */
export const PREVENTED_ONLY_BY: Readonly<Record<string, readonly Layer[]>> = {
  "zombie-read": ["is-current", "lease-guard"],
  "socket-stale-delivery": ["is-current", "lease-guard"],
  "alarm-stale-fire": ["is-current", "lease-guard"],
  "user-db-stale-write": ["user-fence"],
};

/** The violation kinds a run keeping `on` expects, because every layer that prevents them is off. */
export function expectedKinds(on: readonly Layer[]): string[] {
  return Object.entries(PREVENTED_ONLY_BY)
    .filter(([, layers]) => layers.every((layer) => !on.includes(layer)))
    .map(([kind]) => kind);
}

export function countRefusals(refusals: readonly LayerRefusal[]): Record<Layer, number> {
  const counts = Object.fromEntries(LAYERS.map((layer) => [layer, 0])) as Record<Layer, number>;
  for (const refusal of refusals) counts[refusal.layer]++;
  return counts;
}
