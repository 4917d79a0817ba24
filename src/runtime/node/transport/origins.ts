/** An advertise URL as the data plane's HTTP client takes it. */
export interface Origin {
  /** `scheme://host[:port]`, what the client pools connections by (the default port left out). */
  origin: string;
  /** The advertise URL's own path, without a trailing slash ("" for none). */
  path: string;
  /** The Host header of a forward: the host, bracketed when IPv6, with a port unless it is the scheme's default. */
  hostHeader: string;
}

/** More distinct advertise URLs than a fleet has workers: a full cache just starts again. */
const MAX_ORIGINS = 10_000;

/**
 * Advertise URLs parsed once each: the data plane forwards to the same few hundred workers over
 * and over, and a URL parse per forward is measurable on the hot path.
 */
export class OriginCache {
  private readonly parsed = new Map<string, Origin>();

  of(advertiseUrl: string): Origin {
    let origin = this.parsed.get(advertiseUrl);
    if (origin) return origin;
    const url = new URL(advertiseUrl);
    origin = { origin: url.origin, path: url.pathname.replace(/\/$/, ""), hostHeader: url.host };
    if (this.parsed.size >= MAX_ORIGINS) this.parsed.clear();
    this.parsed.set(advertiseUrl, origin);
    return origin;
  }
}
