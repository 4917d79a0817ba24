/**
 * The comparison the bench exists for, as terminal tables: each front by answer shape
 * (Content-Length, chunked) with req/s, p99 and the ratio to the plain node:http proxy of the
 * same run; the client-headroom line; 1 against 2 Pinboard processes; the paced rows.
 */
import { fmt, ratio, rowName, type ScenarioResult, textTable } from "./report.ts";

export interface FrontLabel {
  front: string;
  label: string;
}

const FRAMINGS = ["length", "chunked"] as const;

/** Fronts in table order, with what each one is. */
export function frontLabels(nginx: { version: string; workerProcesses: number } | null): FrontLabel[] {
  return [
    ...(nginx ? [{ front: "ceiling", label: "wrk's ceiling (nginx answers itself)" }] : []),
    { front: "direct", label: "direct (the worker itself)" },
    { front: "plain", label: "plain node:http proxy" },
    { front: "plain-resolve", label: "plain + one resolve (analysis)" },
    ...(nginx ? [{ front: "nginx", label: `${nginx.version} (${nginx.workerProcesses} worker process)` }] : []),
    { front: "pinboard-hot", label: "pinboard-hot" },
    { front: "pinboard-new", label: "pinboard-new" },
    { front: "workerd-hot", label: "workerd-hot" },
    { front: "workerd-new", label: "workerd-new" },
    { front: "workerd-hot-regional", label: "workerd-hot, REST +2 ms" },
  ];
}

export function frontTable(byName: (name: string) => ScenarioResult | undefined, fronts: FrontLabel[]): string {
  const head = ["front", "CL req/s", "CL p99 ms", "CL × plain", "chunked req/s", "chunked p99 ms", "chunked × plain"];
  const body: string[][] = [];
  for (const { front, label } of fronts) {
    const cells = FRAMINGS.flatMap((framing) => {
      const r = byName(rowName(front, framing));
      const plain = byName(rowName("plain", framing));
      return [fmt(r?.rps, 0), fmt(r?.p99Ms, 2), front === "plain" || !r ? "–" : `${fmt(ratio(r.rps, plain?.rps), 2)}×`];
    });
    if (cells.some((c) => c !== "–")) body.push([label, ...cells]);
  }
  return textTable(head, body);
}

/**
 * Whether the client could have capped the fronts. The ceiling row is wrk against nginx answering
 * by itself: at 3 × the fastest proxy or more, the client was not their limit. direct (client and
 * worker alone) against each proxy, per answer shape, says whether the worker was: a front at a
 * third of direct's rate or less had the worker's capacity to spare.
 */
export function headroomLines(byName: (name: string) => ScenarioResult | undefined, fronts: FrontLabel[]): string[] {
  const proxies = fronts.filter((f) => f.front !== "direct" && f.front !== "ceiling");
  const ceiling = byName(rowName("ceiling", "length"));
  const fastest = fastestProxy(byName, proxies);
  const share = (r: ScenarioResult) =>
    r.clientCpuShare == null ? "" : ` with wrk at ${fmt(100 * r.clientCpuShare, 0)} % of a core`;
  const client =
    ceiling && fastest
      ? `client ceiling: wrk drove ${fmt(ceiling.rps, 0)} req/s against nginx answering by itself${share(ceiling)} = ${fmt(ratio(ceiling.rps, fastest.rps), 2)}× the fastest proxy (${fastest.front}, ${fastest.framing}); ${ceiling.rps >= 3 * fastest.rps ? "the client was not the bottleneck" : "the client may have been the bottleneck"}`
      : "client ceiling: not measured (needs nginx)";
  return [
    client,
    ...FRAMINGS.map((framing) => {
      const shape = framing === "length" ? "Content-Length" : "chunked";
      const direct = byName(rowName("direct", framing));
      const rows = proxies.flatMap((f) => {
        const r = byName(rowName(f.front, framing));
        return r ? [{ front: f.front, rps: r.rps }] : [];
      });
      if (!direct || rows.length === 0) return `worker headroom (${shape}): not measured`;
      const top = rows.reduce((a, b) => (b.rps > a.rps ? b : a));
      const close = rows.filter((p) => p.rps * 3 > direct.rps).map((p) => p.front);
      const verdict =
        close.length === 0
          ? "≥ 3× every proxy"
          : `within 3× of direct: ${close.join(", ")} (the worker may have been their limit)`;
      return `worker headroom (${shape}): direct ${fmt(direct.rps, 0)} req/s${share(direct)} = ${fmt(ratio(direct.rps, top.rps), 2)}× the fastest proxy (${top.front}); ${verdict}`;
    }),
  ];
}

/** The fastest proxy row of either answer shape. */
function fastestProxy(
  byName: (name: string) => ScenarioResult | undefined,
  proxies: FrontLabel[],
): { front: string; framing: string; rps: number } | undefined {
  let best: { front: string; framing: string; rps: number } | undefined;
  for (const { front } of proxies) {
    for (const framing of FRAMINGS) {
      const r = byName(rowName(front, framing));
      if (r && (!best || r.rps > best.rps)) best = { front, framing, rps: r.rps };
    }
  }
  return best;
}

export function processTable(byName: (name: string) => ScenarioResult | undefined): string | null {
  const one = byName(rowName("pinboard-hot-1proc", "length"));
  const two = byName(rowName("pinboard-hot-2proc", "length"));
  if (!one || !two) return null;
  const head = [
    "Pinboard processes (hot, CL)",
    "req/s",
    "p50 ms",
    "p99 ms",
    "CPU s/10k (all)",
    "RSS MB (all)",
    "× 1 process",
  ];
  const line = (label: string, r: ScenarioResult) => [
    label,
    fmt(r.rps, 0),
    fmt(r.p50Ms, 2),
    fmt(r.p99Ms, 2),
    fmt(r.cpuPer10k.proxy, 2),
    fmt(r.proxyRssMb, 0),
    `${fmt(ratio(r.rps, one.rps), 2)}×`,
  ];
  return textTable(head, [line("1 (PINBOARD_PROCESSES unset)", one), line("2 (PINBOARD_PROCESSES=2)", two)]);
}

export function pacedTable(
  byName: (name: string) => ScenarioResult | undefined,
  fronts: FrontLabel[],
  rate: number,
): string | null {
  const plain = byName(`${rowName("plain", "length")}@${rate}/s`);
  const body = fronts.flatMap(({ front, label }) => {
    const r = byName(`${rowName(front, "length")}@${rate}/s`);
    if (!r) return [];
    const d = plain?.p99Ms != null && r.p99Ms != null && front !== "plain" ? r.p99Ms - plain.p99Ms : null;
    return [
      [
        label,
        fmt(r.rps, 0),
        fmt(r.p50Ms, 2),
        fmt(r.p99Ms, 2),
        d === null ? "–" : `${d >= 0 ? "+" : "−"}${Math.abs(d).toFixed(2)}`,
        String(r.non2xx + r.errors),
      ],
    ];
  });
  return body.length
    ? textTable([`paced at ${rate} req/s (CL)`, "req/s", "p50 ms", "p99 ms", "p99 − plain ms", "failed"], body)
    : null;
}
