import cluster, { type Worker } from "node:cluster";
import { AggregatorRegistry, type Registry } from "prom-client";
import type { MetricsSource } from "./metrics-route.ts";

/**
 * GET /metrics with PINBOARD_PROCESSES > 1: the process that takes the scrape asks the primary,
 * the primary asks every serving process for its registry as JSON and sums them with prom-client's
 * cluster aggregator (AggregatorRegistry.aggregate: counters and histograms summed, each gauge by
 * its `aggregator`, the default process metrics as prom-client labels them).
 *
 * Not prom-client's clusterMetrics(): it asks every connected worker, including one still loading
 * after a restart, which cannot answer yet, so every scrape in that window would wait 5 s and
 * fail, and it keeps the entry of a failed collection for good. Here only processes that listen
 * are asked, and one that exits meanwhile counts as empty.
 */

/** How long the primary waits for one process's registry: prom-client's own wait. */
const COLLECT_TIMEOUT_MS = 5000;
/** How long a scrape waits for the primary: past every collection's own timeout. */
const SCRAPE_TIMEOUT_MS = COLLECT_TIMEOUT_MS + 3000;

/** One process's registry as getMetricsAsJSON() gives it: what the aggregator takes. */
type RegistryJson = Awaited<ReturnType<Registry["getMetricsAsJSON"]>>;

type Message =
  | { type: "pinboard:metrics-scrape"; id: number }
  | { type: "pinboard:metrics-aggregate"; id: number; text?: string; error?: string }
  | { type: "pinboard:metrics-collect"; id: number }
  | { type: "pinboard:metrics-local"; id: number; metrics?: RegistryJson; error?: string };

function isMessage(message: unknown): message is Message {
  if (typeof message !== "object" || message === null) return false;
  const { type, id } = message as { type?: unknown; id?: unknown };
  return typeof type === "string" && type.startsWith("pinboard:metrics-") && typeof id === "number";
}

const errorText = (err: unknown) => (err instanceof Error ? err.message : String(err));

/** Primary: answers every process's scrape with the aggregate of all listening processes. */
export function answerMetricsScrapes(): void {
  const listening = new Set<Worker>();
  const collections = new Map<number, { worker: Worker; settle(metrics: RegistryJson | undefined | Error): void }>();
  let nextId = 0;

  const collectFrom = (worker: Worker) =>
    new Promise<RegistryJson | undefined>((resolve, reject) => {
      const id = nextId++;
      const settle = (result: RegistryJson | undefined | Error) => {
        collections.delete(id);
        clearTimeout(timer);
        worker.off("exit", gone);
        if (result instanceof Error) reject(result);
        else resolve(result);
      };
      // A process that exits meanwhile has nothing left to count.
      const gone = () => settle(undefined);
      const timer = setTimeout(
        () =>
          settle(new Error(`process ${worker.process.pid} did not send its metrics within ${COLLECT_TIMEOUT_MS} ms`)),
        COLLECT_TIMEOUT_MS,
      );
      collections.set(id, { worker, settle });
      worker.once("exit", gone);
      send(worker, { type: "pinboard:metrics-collect", id });
    });

  const aggregate = async () => {
    const registries = await Promise.all([...listening].map(collectFrom));
    return AggregatorRegistry.aggregate(registries.filter((r) => r !== undefined)).metrics();
  };

  cluster.on("listening", (worker) => listening.add(worker));
  cluster.on("exit", (worker) => listening.delete(worker));
  cluster.on("message", (worker, message: unknown) => {
    if (!isMessage(message)) return;
    if (message.type === "pinboard:metrics-scrape") {
      aggregate().then(
        (text) => send(worker, { type: "pinboard:metrics-aggregate", id: message.id, text }),
        (err: unknown) => send(worker, { type: "pinboard:metrics-aggregate", id: message.id, error: errorText(err) }),
      );
    } else if (message.type === "pinboard:metrics-local") {
      const collection = collections.get(message.id);
      if (collection?.worker !== worker) return;
      collection.settle(message.metrics ?? new Error(message.error ?? "no metrics"));
    }
  });
}

function send(worker: Worker, message: Message): void {
  if (worker.isConnected()) worker.send(message);
}

/**
 * A serving process: sends its registry when the primary collects, and takes its /metrics text
 * from the primary (startNode's `metricsSource` option).
 */
export function clusterMetricsSource(local: Registry): MetricsSource {
  const scrapes = new Map<
    number,
    { resolve(text: string): void; reject(err: Error): void; timer: ReturnType<typeof setTimeout> }
  >();
  let nextId = 0;
  const toPrimary = (message: Message) => process.send?.(message);

  process.on("message", (message: unknown) => {
    if (!isMessage(message)) return;
    if (message.type === "pinboard:metrics-collect") {
      local.getMetricsAsJSON().then(
        (metrics) => toPrimary({ type: "pinboard:metrics-local", id: message.id, metrics }),
        (err: unknown) => toPrimary({ type: "pinboard:metrics-local", id: message.id, error: errorText(err) }),
      );
    } else if (message.type === "pinboard:metrics-aggregate") {
      const scrape = scrapes.get(message.id);
      if (scrape === undefined) return;
      scrapes.delete(message.id);
      clearTimeout(scrape.timer);
      if (message.text !== undefined) scrape.resolve(message.text);
      else scrape.reject(new Error(message.error ?? "no aggregate"));
    }
  });

  return {
    contentType: local.contentType,
    metrics: () =>
      new Promise<string>((resolve, reject) => {
        if (!process.connected) return reject(new Error("the primary process is gone"));
        const id = nextId++;
        const timer = setTimeout(() => {
          scrapes.delete(id);
          reject(new Error(`no aggregate from the primary process within ${SCRAPE_TIMEOUT_MS} ms`));
        }, SCRAPE_TIMEOUT_MS);
        scrapes.set(id, { resolve, reject, timer });
        toPrimary({ type: "pinboard:metrics-scrape", id });
      }),
  };
}
