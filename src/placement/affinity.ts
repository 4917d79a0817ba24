/**
 * Affinity: which worker a new placement prefers. By default the key is the client's address
 * (X-Forwarded-For is believed only from PINBOARD_TRUSTED_PROXIES), so one client's ids gather
 * on one worker while it has headroom; an app can plug its own key (a tenant, a room) or null to
 * skip the preference.
 */
export interface ClientInfo {
  /** The client's address as Pinboard judges it. */
  address: string;
  /** The TCP peer that connected to Pinboard. */
  peer: string;
}

/** What an affinity key may read of a request (the data plane's InboundRequest is one). */
export interface AffinityRequest {
  readonly method: string;
  readonly pathname: string;
  readonly search: string;
  readonly host: string;
  readonly headers: { get(name: string): string | null };
}

export type AffinityKey = (request: AffinityRequest, client: ClientInfo) => string | null;

export const clientIpAffinity: AffinityKey = (_request, client) => (client.address === "" ? null : client.address);

/**
 * The client address: the peer, unless the peer is a trusted proxy, in which case the rightmost
 * X-Forwarded-For entry that is not itself a trusted proxy.
 */
export function clientAddress(peer: string, forwardedFor: string | null, trustedProxies: readonly string[]): string {
  if (!forwardedFor || !trustedProxies.includes(peer)) return peer;
  const hops = forwardedFor
    .split(",")
    .map((h) => h.trim())
    .filter((h) => h !== "");
  for (let i = hops.length - 1; i >= 0; i--) {
    if (!trustedProxies.includes(hops[i]!)) return hops[i]!;
  }
  return hops[0] ?? peer;
}

/**
 * The key's uint32 hash, which the resolve script mixes with each session's seed: FNV-1a over
 * the UTF-16 code units, then murmur3's finaliser. Synchronous and cheap, since it runs on every
 * request, hot ones included; it needs spread, not secrecy.
 */
export function affinityHash(key: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) {
    h ^= key.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}
