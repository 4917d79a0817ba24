import { mintCredential } from "../../src/auth/mint.ts";
import type { Fault } from "./history.ts";
import { SECRET, type Topology } from "./topology.ts";

/**
 * The nemesis' operator actions (faults.ts): what an operator does to a live fleet, through
 * Pinboard's operator API with a pinboard:operator credential, while the clients run.
 *
 *   drain-worker         POST /registry/drain of one worker, a cordon (deadline null) or a timed
 *                        drain a minute out, held a few seconds, then POST /registry/undrain
 *   wind-down-keys       POST /registry/wind_down of 1–3 keys, deadline 0 (the lease, at least)
 *   wind-down-namespace  the same for every placement of one namespace
 *
 * A wind-down hands its instances over once the lease passed (each releases and the next request
 * places it afresh); the fault lasts until then and a second more. A call Pinboard refuses (a
 * node that has not finished a cold start, a worker that is re-registering) is recorded in the
 * fault's mode; an undrain is retried until it is taken, since a cordon left behind would starve
 * the rest of the run.
 */

export type OperatorFaultKind = "drain-worker" | "wind-down-keys" | "wind-down-namespace";

export const WIND_DOWN_NAMESPACES = ["/lists", "/counters", "/sockets", "/alarms"] as const;

const UNDRAIN_TIMEOUT_MS = 30_000;

let credential: Promise<string> | undefined;

function operatorCredential(): Promise<string> {
  credential ??= mintCredential({
    secret: SECRET,
    sub: "chaos-operator",
    scopes: ["pinboard:operator"],
    pinboard: { namespaces: ["*"] },
    ttlSeconds: 3600,
  });
  return credential;
}

/** One operator call; its status and body, or why it had no answer. */
async function operatorCall(base: string, path: string, body: object): Promise<{ ok: boolean; said: string }> {
  try {
    const res = await fetch(`${base}${path}`, {
      method: "POST",
      headers: { authorization: `Bearer ${await operatorCredential()}`, "content-type": "application/json" },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(5000),
    });
    return { ok: res.ok, said: `${res.status} ${(await res.text()).slice(0, 120)}` };
  } catch (err) {
    return { ok: false, said: err instanceof Error ? err.message : String(err) };
  }
}

export interface OperatorFaultContext {
  topology: Topology;
  random: () => number;
  /** Every key the workload uses, as "/ns/id". */
  keys: string[];
}

export async function injectOperatorFault(kind: OperatorFaultKind, context: OperatorFaultContext): Promise<Fault> {
  const { topology, random } = context;
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
  const between = (min: number, max: number) => Math.floor(min + random() * (max - min));
  const node = pick(topology.pinboards).url;
  const lease = topology.options.leaseTtlMs;
  const start = Date.now();
  const done = (target: string, mode: string): Fault => ({ kind, target, mode, start, healed: Date.now() });
  switch (kind) {
    case "drain-worker": {
      const worker = pick(topology.workers).id;
      const timed = random() < 0.5;
      const drained = await operatorCall(node, "/registry/drain", { clientId: worker, deadline: timed ? 60 : null });
      await sleep(between(2000, 5000));
      await undrain(topology, worker);
      return done(worker, `${timed ? "timed 60 s, undrained before it" : "cordon"}: ${drained.said}`);
    }
    case "wind-down-keys": {
      const keys = [...new Set(Array.from({ length: between(1, 4) }, () => pick(context.keys)))];
      const said = [];
      for (const key of keys) {
        const [, namespace, id] = key.split("/");
        said.push(
          (await operatorCall(node, "/registry/wind_down", { namespace: `/${namespace}`, id, deadline: 0 })).said,
        );
      }
      await sleep(lease + 1000);
      return done(keys.join(","), said.join("; "));
    }
    case "wind-down-namespace": {
      const namespace = pick(WIND_DOWN_NAMESPACES);
      const said = await operatorCall(node, "/registry/wind_down", { namespace, deadline: 0 });
      await sleep(lease + 1000);
      return done(namespace, said.said);
    }
  }
}

async function undrain(topology: Topology, worker: string): Promise<void> {
  const deadline = Date.now() + UNDRAIN_TIMEOUT_MS;
  for (let i = 0; ; i++) {
    const node = topology.pinboards[i % topology.pinboards.length]!.url;
    const answer = await operatorCall(node, "/registry/undrain", { clientId: worker });
    if (answer.ok) return;
    if (Date.now() > deadline) throw new Error(`undrain ${worker}: ${answer.said}`);
    await sleep(500);
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
