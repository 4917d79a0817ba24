/**
 * Paced load: `connections` keep-alive connections that together offer `rate` requests/s, each
 * connection sending on its own evenly spaced schedule (with a random phase), never in bursts.
 * autocannon's overallRate fires each second's quota at once and then idles, which measures a
 * burst's queue rather than the latency a steady load sees. A request that cannot start on time
 * (its connection still busy) is timed from its scheduled start, so queueing is not hidden
 * (no coordinated omission).
 */
import { Agent, request } from "node:http";

export interface PacedResult {
  requests: number;
  statuses: Record<string, number>;
  errors: number;
  latencies: Float64Array;
  seconds: number;
}

export async function firePaced(
  url: string,
  path: () => string,
  headers: Record<string, string>,
  o: { connections: number; rate: number; durationS: number; sampleCap: number },
): Promise<PacedResult> {
  const origin = new URL(url);
  const agent = new Agent({ keepAlive: true, maxSockets: o.connections });
  const latencies = new Float64Array(o.sampleCap);
  let n = 0;
  let errors = 0;
  const statuses: Record<string, number> = {};
  const interval = (1000 * o.connections) / o.rate;
  const started = performance.now();
  const until = started + o.durationS * 1000;

  const send = () =>
    new Promise<number>((resolve) => {
      const req = request(
        { host: origin.hostname, port: origin.port, path: path(), method: "GET", headers, agent },
        (res) => {
          res.resume();
          res.once("end", () => resolve(res.statusCode ?? 0));
          res.once("error", () => resolve(0));
        },
      );
      req.setTimeout(10_000, () => req.destroy(new Error("timeout")));
      req.once("error", () => resolve(0));
      req.end();
    });

  const connection = async () => {
    let due = started + Math.random() * interval;
    while (due < until) {
      const wait = due - performance.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      const status = await send();
      if (status === 0) errors++;
      else statuses[status] = (statuses[status] ?? 0) + 1;
      if (n < latencies.length) latencies[n++] = performance.now() - due;
      due += interval;
    }
  };
  await Promise.all(Array.from({ length: o.connections }, connection));
  agent.destroy();
  const requests = Object.values(statuses).reduce((a, b) => a + b, 0);
  return { requests, statuses, errors, latencies: latencies.subarray(0, n), seconds: (performance.now() - started) / 1000 };
}
