/**
 * The loads of the comparison, one per front and answer shape, all ending at the same worker
 * server (the base fleet) with the same path shape (`/{ns}/{id}/{length|chunked}`) and the
 * same 11-byte answer:
 *
 *   direct        the worker itself, with the attestation and epoch headers a forward carries
 *   plain         the plain node:http proxy (bench/plain-proxy-main.ts) in front of worker 0
 *   plain-resolve the same proxy running the resolve script for Pinboard's hot ids first
 *                 (bench/resolve-proxy-main.ts): what one Redis round trip per forward costs
 *   nginx         nginx in front of worker 0, when installed
 *   pinboard-hot  Pinboard, ids placed beforehand (one resolve, one forward)
 *   pinboard-new  Pinboard, a new id per request (a placement each)
 *   workerd-*     the Workers entry in workerd, the same two loads
 *   workerd-hot-regional  the hot load again through a Workers entry whose REST bridge adds 2 ms
 *                 to every Redis call, as a regional Upstash would
 *
 * direct, plain and nginx send their own ids (`d-…`) to worker 0 with the attestation headers,
 * so the worker does the same work behind every front.
 */
import type { LoadSpec } from "./load.ts";
import { cycle, type Framing, fresh, type PathPlan } from "./paths.ts";
import { rowName } from "./report.ts";
import type { Topology } from "./topology.ts";
import type { RunningWorkersEntry } from "./workers-entry.ts";
import type { WrkHeaders } from "./wrk.ts";

export interface FrontsContext {
  top: Topology;
  workerd: RunningWorkersEntry | undefined;
  /** The Workers entry behind a REST bridge that delays every call. */
  workerdRegional?: RunningWorkersEntry | undefined;
  /** Ids cycled by the hot loads: `h-0…` placed through Pinboard, `d-0…` on worker 0. */
  hotCount: number;
  /** The headers a forward to worker 0 carries for each path of a cycle, fresh for each window. */
  attested: (plan: PathPlan) => Promise<WrkHeaders>;
  baseWorkers: number;
}

const FRAMINGS: Framing[] = ["length", "chunked"];

/** A cycle plan with the attested headers of its paths, signed when its window starts. */
function attestedPlan(c: FrontsContext, plan: PathPlan): Pick<LoadSpec, "plan" | "headers"> {
  return { plan, headers: () => c.attested(plan) };
}

/** Every saturated load of the comparison, in the order they run within a round. */
export function frontSpecs(c: FrontsContext): LoadSpec[] {
  const { top, workerd, hotCount } = c;
  const redis = top.redis.process.pid!;
  const worker = top.base.child.pid;
  const workerPath = new URL(top.base.workers[0]!.advertiseUrl).pathname;
  const specs: LoadSpec[] = [];
  const add = (front: string, framing: Framing, spec: Omit<LoadSpec, "name" | "front" | "framing">) =>
    specs.push({ name: rowName(front, framing), front, framing, ...spec });

  for (const framing of FRAMINGS) {
    add("direct", framing, {
      url: top.base.url,
      ...attestedPlan(c, cycle(`${workerPath}/hot/d-`, hotCount, framing)),
      pids: { redis, worker },
      note: "the worker itself, attested like a forward",
    });
    add("plain", framing, {
      url: top.plain.url,
      ...attestedPlan(c, cycle("/hot/d-", hotCount, framing)),
      pids: { proxy: top.plain.child.pid, redis, worker },
      note: "node:http server + http.request with a keep-alive agent, piped both ways, to worker 0 (runs under tsx)",
    });
    if (top.nginx && framing === "length") {
      add("ceiling", framing, {
        url: top.nginx.url,
        plan: cycle("/ceiling/d-", hotCount, framing),
        pids: { proxy: { tree: top.nginx.pid } },
        note: "nginx answering 11 bytes by itself, no worker behind it: what wrk can drive on this machine",
      });
    }
    if (top.nginx) {
      add("nginx", framing, {
        url: top.nginx.url,
        ...attestedPlan(c, cycle("/hot/d-", hotCount, framing)),
        pids: { proxy: { tree: top.nginx.pid }, redis, worker },
        note: `${top.nginx.version}, ${top.nginx.workerProcesses} worker process, upstream keepalive 64, to worker 0; CPU of master + workers`,
      });
    }
  }
  for (const framing of FRAMINGS) {
    add("plain-resolve", framing, {
      url: top.plainResolve.url,
      ...attestedPlan(c, cycle("/hot/h-", hotCount, framing)),
      pids: { proxy: top.plainResolve.child.pid, redis, worker },
      note: "the plain proxy running the resolve script (ioredis via TcpRedis) for Pinboard's hot ids first, to worker 0",
    });
  }
  const pb = { proxy: top.pinboard.pid, redis, worker };
  for (const framing of FRAMINGS) {
    add("pinboard-hot", framing, {
      url: top.pinboard.url,
      plan: cycle("/hot/h-", hotCount, framing),
      pids: pb,
      note: `${hotCount} ids placed beforehand through Pinboard, cycled`,
    });
  }
  add("pinboard-new", "length", {
    url: top.pinboard.url,
    plan: fresh("/new/n-", "length"),
    pids: pb,
    note: `a new id per request, ${c.baseWorkers} live workers; client-IP affinity sends all to one worker`,
  });
  if (workerd) {
    const w = { proxy: workerd.pid, redis, worker };
    const bridge = "the REST bridge's CPU is not counted";
    add("workerd-hot", "length", {
      url: workerd.url,
      plan: cycle("/hot/h-", hotCount, "length"),
      pids: w,
      note: `the Workers entry in workerd, the same hot ids; ${bridge}`,
    });
    add("workerd-new", "length", {
      url: workerd.url,
      plan: fresh("/new/w-", "length"),
      pids: w,
      note: `the Workers entry in workerd, a new id per request; ${bridge}`,
    });
  }
  if (c.workerdRegional) {
    add("workerd-hot-regional", "length", {
      url: c.workerdRegional.url,
      plan: cycle("/hot/h-", hotCount, "length"),
      pids: { proxy: c.workerdRegional.pid, redis, worker },
      note: "the Workers entry in workerd, the same hot ids, its REST bridge adding 2 ms to every Redis call",
    });
  }
  return specs;
}

/**
 * workerd-hot and its regional twin at one low offered rate: unqueued, the difference of their
 * latencies is what the hot path waits on Redis, 2 ms per round trip it makes.
 */
export function workerdPacedSpecs(specs: LoadSpec[], rate: number, connections: number): LoadSpec[] {
  return specs
    .filter((s) => s.front === "workerd-hot" || s.front === "workerd-hot-regional")
    .map((s) => ({
      ...s,
      name: `${s.name}@${rate}/s`,
      rate,
      note: `${s.note ?? ""}; paced: ${rate} req/s spread evenly over ${connections} connections`,
    }));
}

/** The same loads again at one offered rate (Content-Length answers), through the proxies that were compared. */
export function pacedSpecs(specs: LoadSpec[], rate: number, connections: number): LoadSpec[] {
  const paced = ["plain", "plain-resolve", "nginx", "pinboard-hot"];
  return specs
    .filter((s) => s.framing === "length" && paced.includes(s.front ?? ""))
    .map((s) => ({
      ...s,
      name: `${s.name}@${rate}/s`,
      rate,
      note: `${s.note ?? ""}; paced: ${rate} req/s spread evenly over ${connections} connections`,
    }));
}
