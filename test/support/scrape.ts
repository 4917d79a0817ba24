import parsePrometheusTextFormat from "parse-prometheus-text-format";
import type { PinboardProcess } from "./pinboard-process.ts";

type Family = { name: string; metrics: Array<{ labels?: Record<string, string>; value?: string }> };

/**
 * One scrape of a Pinboard process's /metrics (with an operator credential), read through a real
 * Prometheus text parser: the sum of `name`'s samples whose labels include `labels`, 0 when none.
 */
export async function metricValue(
  pb: PinboardProcess,
  name: string,
  labels: Record<string, string> = {},
): Promise<number> {
  // /metrics lives outside the base path.
  const res = await fetch(`${new URL(pb.url).origin}/metrics`, {
    headers: { authorization: `Bearer ${await pb.operatorCredential()}` },
  });
  if (res.status !== 200) throw new Error(`/metrics answered ${res.status}`);
  const family = (parsePrometheusTextFormat(await res.text()) as Family[]).find((f) => f.name === name);
  const matching = family?.metrics.filter((m) => Object.entries(labels).every(([k, v]) => m.labels?.[k] === v)) ?? [];
  return matching.reduce((sum, m) => sum + Number(m.value), 0);
}
