/** Numbers as the console writes them. */

/** A rate per second in a few digits: "12", "3.4", "0.25", "0.004", "0". */
export function perSecond(rate: number): string {
  if (rate <= 0) return "0";
  if (rate >= 10) return rate.toFixed(0);
  if (rate >= 1) return rate.toFixed(1);
  if (rate >= 0.01) return rate.toFixed(2);
  return String(Number(rate.toPrecision(1)));
}

/** A count with the viewer's digit grouping: "100,000". */
export function count(n: number): string {
  return n.toLocaleString();
}
