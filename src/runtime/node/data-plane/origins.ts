/** An advertise URL as node:http takes it. */
export interface Origin {
  https: boolean;
  host: string;
  port: number;
  /** The advertise URL's own path, without a trailing slash ("" for none). */
  path: string;
  /**
   * The Host header node:http would send: the host, bracketed when IPv6, with a port unless it is
   * the scheme's default.
   */
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
    const https = url.protocol === "https:";
    origin = {
      https,
      host: url.hostname.replace(/^\[|\]$/g, ""),
      port: url.port === "" ? (https ? 443 : 80) : Number(url.port),
      path: url.pathname.replace(/\/$/, ""),
      hostHeader: url.host,
    };
    if (this.parsed.size >= MAX_ORIGINS) this.parsed.clear();
    this.parsed.set(advertiseUrl, origin);
    return origin;
  }
}
