/**
 * A fixed log-scale latency histogram: bin 0 holds [0, 0.1 ms), bin i holds
 * [0.1·1.09^(i-1), 0.1·1.09^i) ms up to 10 minutes, and the last bin everything above. A
 * percentile is read as the upper bound of the bin holding the nearest-rank sample, capped by the
 * largest sample seen, and rounded up to 4 significant digits: never below the true value, at most
 * 10% above it (9% bin width, 0.2% rounding) from 0.1 ms to 10 minutes; below 0.1 ms at most
 * 0.1 ms above it; above 10 minutes the largest sample.
 */

export const LOWEST_MS = 0.1;
export const GROWTH = 1.09;
export const HIGHEST_MS = 600_000;

const GROWTH_BINS = Math.ceil(Math.log(HIGHEST_MS / LOWEST_MS) / Math.log(GROWTH));
/** Underflow, the growth bins, overflow. */
export const BIN_COUNT = GROWTH_BINS + 2;

/** Each bin's exclusive upper bound (ms); the overflow bin's is Infinity. */
export const BIN_UPPER_MS: Float64Array = (() => {
  const upper = new Float64Array(BIN_COUNT);
  for (let i = 0; i <= GROWTH_BINS; i++) upper[i] = LOWEST_MS * GROWTH ** i;
  upper[BIN_COUNT - 1] = Number.POSITIVE_INFINITY;
  return upper;
})();

const LN_GROWTH = Math.log(GROWTH);

/** The bin of a duration in ms (a negative or NaN one counts in bin 0). Allocates nothing. */
export function binOf(ms: number): number {
  if (!(ms >= LOWEST_MS)) return 0;
  let i = Math.floor(Math.log(ms / LOWEST_MS) / LN_GROWTH) + 1;
  if (i >= BIN_COUNT - 1) return BIN_COUNT - 1;
  // The logarithm may land one bin off at a bound; the table decides.
  if (ms >= BIN_UPPER_MS[i]!) i++;
  else if (ms < BIN_UPPER_MS[i - 1]!) i--;
  return i;
}

/**
 * The `percent` (1–100) nearest-rank percentile of the `total` samples counted in
 * `counts[offset … offset + BIN_COUNT)`, whose largest is `maxMs`; null when there are none.
 */
export function percentileMs(
  counts: Uint32Array,
  offset: number,
  total: number,
  percent: number,
  maxMs: number,
): number | null {
  if (total === 0) return null;
  // Integer arithmetic: 0.99 · n in floating point may land just above an integer.
  const rank = Math.max(1, Math.ceil((total * percent) / 100));
  let seen = 0;
  for (let i = 0; i < BIN_COUNT; i++) {
    seen += counts[offset + i]!;
    if (seen >= rank) return ceilSignificant(Math.min(BIN_UPPER_MS[i]!, maxMs));
  }
  return ceilSignificant(maxMs);
}

/** `value` rounded up to 4 significant digits, so 12.3456 reads 12.35, not 12.345600000000001. */
export function ceilSignificant(value: number): number {
  if (value <= 0 || !Number.isFinite(value)) return value;
  const places = 3 - Math.floor(Math.log10(value));
  if (places >= 0) {
    const scale = 10 ** places;
    return Math.ceil(value * scale) / scale;
  }
  const scale = 10 ** -places;
  return Math.ceil(value / scale) * scale;
}
