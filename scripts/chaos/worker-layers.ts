/**
 * The chaos worker's side of the protection layers (layers.ts): each one switched by CHAOS_LAYERS
 * and each refusal counted in the layer log, observed from outside the library (a store wrapper,
 * a wrapper around Lease.prototype.lapsed) so no library code changes.
 */
import {
  type DurabilityStore,
  type RedisDurabilityStore,
  type RequestContext,
  StaleEpochError,
} from "../../src/pinned/index.ts";
import { Lease } from "../../src/pinned/lease.ts";
import { LAYERS, type Layer, parseLayers } from "./layers.ts";
import type { LineLog } from "./sync-log.ts";

/** CHAOS_LAYERS, or (older callers) NO_FENCE=1 for none; all four when neither is set. */
export function layersFromEnv(env: Record<string, string | undefined>): Set<Layer> {
  if (env.CHAOS_LAYERS !== undefined) return new Set(parseLayers(env.CHAOS_LAYERS));
  return new Set(env.NO_FENCE === "1" ? [] : LAYERS);
}

export class WorkerLayers {
  private lease: Lease | undefined;
  private readonly realLapsed = Lease.prototype.lapsed;
  /** Set while the worker's own owner check asks ctx.isCurrent(), whose lapse is not a library refusal. */
  private asking = false;

  constructor(
    readonly on: Set<Layer>,
    private readonly worker: string,
    private readonly log: LineLog,
  ) {}

  refused(layer: Layer, key?: string, epoch?: string): void {
    this.log({ worker: this.worker, layer, ...(key ? { key } : {}), ...(epoch ? { epoch } : {}), at: Date.now() });
  }

  /**
   * Wraps Lease.prototype.lapsed: it remembers the worker's lease (for is-current), says false
   * when lease-guard is off, and counts each true it answers the library as a lease-guard refusal
   * (the library asks at every request's acquire and at each input-gate re-check; both refuse).
   */
  installLeaseGuard(): void {
    const layers = this;
    const real = this.realLapsed;
    Lease.prototype.lapsed = function (this: Lease): boolean {
      layers.lease = this;
      if (!layers.on.has("lease-guard")) return false;
      const lapsed = real.call(this);
      if (lapsed && !layers.asking) layers.refused("lease-guard");
      return lapsed;
    };
  }

  /**
   * is-current: may this activation still answer a read? Counts a refusal. Off: always yes. It is
   * ctx.isCurrent() (not retired, lease not lapsed); with lease-guard off, the library's view of the
   * lease never lapses, so the lapse is read from the lease itself. With lease-guard on it is
   * ctx.isCurrent() alone, so a library whose isCurrent() is broken is not covered up here.
   */
  owner(ctx: RequestContext): boolean {
    if (!this.on.has("is-current")) return true;
    this.asking = true;
    let current: boolean;
    try {
      const lapsed = !this.on.has("lease-guard") && this.lease !== undefined && this.realLapsed.call(this.lease);
      current = ctx.isCurrent() && !lapsed;
    } finally {
      this.asking = false;
    }
    if (!current) this.refused("is-current", `${ctx.ns}/${ctx.id}`, ctx.epoch);
    return current;
  }

  /** store-fence: the store as it is (its StaleEpochErrors counted), or, off, one that never refuses. */
  store(store: RedisDurabilityStore): DurabilityStore {
    if (!this.on.has("store-fence")) return unfenced(store);
    const counted =
      <A extends unknown[], R>(method: (ref: { ns: string; id: string }, epoch: string, ...rest: A) => Promise<R>) =>
      async (ref: { ns: string; id: string }, epoch: string, ...rest: A): Promise<R> => {
        try {
          return await method.call(store, ref, epoch, ...rest);
        } catch (err) {
          if (err instanceof StaleEpochError) this.refused("store-fence", `${ref.ns}/${ref.id}`, epoch);
          throw err;
        }
      };
    return Object.assign(Object.create(store) as DurabilityStore, {
      activate: counted(store.activate),
      put: counted(store.put),
      delete: counted(store.delete),
      deleteAll: counted(store.deleteAll),
    } satisfies Partial<DurabilityStore>);
  }
}

/** The store with its fence defeated: every write quotes the epoch already stored, so it never refuses. */
function unfenced(store: RedisDurabilityStore): DurabilityStore {
  const quoted = async (ref: Parameters<DurabilityStore["epochOf"]>[0], epoch: string) =>
    (await store.epochOf(ref)) ?? epoch;
  return Object.assign(Object.create(store) as DurabilityStore, {
    activate: async (ref, epoch, info) => store.activate(ref, await quoted(ref, epoch), info),
    put: async (ref, epoch, entries) => store.put(ref, await quoted(ref, epoch), entries),
    delete: async (ref, epoch, keys) => store.delete(ref, await quoted(ref, epoch), keys),
    deleteAll: async (ref, epoch) => store.deleteAll(ref, await quoted(ref, epoch)),
  } satisfies Partial<DurabilityStore>);
}
