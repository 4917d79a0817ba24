import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { AttestationClaims } from "../../src/contract/attestation.ts";
import { RequestContextImpl } from "../../src/pinned/context.ts";
import type { InstanceRef } from "../../src/pinned/index.ts";
import { MemoryDurabilityStore } from "../../src/pinned/index.ts";
import { InstanceTable } from "../../src/pinned/instance-table.ts";
import { GATES_ON, type GateSettings } from "../../src/pinned/live-instance.ts";
import type { Instance, RequestContext } from "../../src/pinned/types.ts";
import { memoryLogger } from "../support/local-worker.ts";

/**
 * The gates as a property: any number of requests, each a short program of storage
 * read-modify-writes, README-style increments of a counter kept in memory (filled from storage
 * at the top of fetch, as the README's Counter does; the write awaited or not), plain reads and
 * awaits of other I/O, arriving and completing in an order fast-check's scheduler picks. No
 * increment may be lost, and no answer may leave before a write made before it is
 * acknowledged. The store applies each call when it is made, in order, like a command on one
 * connection; the scheduler only decides when each answer comes back.
 *
 * A memory cache filled lazily AFTER another await is outside the property: the library cannot
 * hold back the resumption of I/O it did not start (Durable Objects can), so two such fills can
 * race (docs/worker-library.md, "Gates").
 */

type Step = "incr" | "memIncr" | "memIncrAwaited" | "read" | "io";
const step = fc.constantFrom<Step>("incr", "memIncr", "memIncrAwaited", "read", "io");

interface World {
  s: fc.Scheduler;
  /** Writes made so far (their numbers are 1..issued) and the ones acknowledged. */
  issued: number;
  acked: Set<number>;
  violations: string[];
}

class ScheduledStore extends MemoryDurabilityStore {
  constructor(private readonly world: World) {
    super();
  }
  override async get(ref: InstanceRef, keys: string[]): Promise<(string | null)[]> {
    const values = await super.get(ref, keys);
    return this.world.s.schedule(Promise.resolve(values), "get");
  }
  override async put(ref: InstanceRef, epoch: string, entries: [string, string][]): Promise<void> {
    await super.put(ref, epoch, entries);
    const write = ++this.world.issued;
    await this.world.s.schedule(Promise.resolve(), `put#${write}`);
    this.world.acked.add(write);
  }
}

function subject(world: World, programs: Step[][]) {
  return class Subject implements Instance {
    private m?: number;
    async fetch(request: Request, ctx: RequestContext): Promise<Response> {
      const program = programs[Number(new URL(request.url).searchParams.get("p"))]!;
      this.m ??= (await ctx.storage.get<number>("m")) ?? 0;
      for (const step of program) {
        if (step === "incr") {
          const n = (await ctx.storage.get<number>("n")) ?? 0;
          await ctx.storage.put("n", n + 1);
        } else if (step === "memIncr" || step === "memIncrAwaited") {
          const write = ctx.storage.put("m", ++this.m);
          if (step === "memIncrAwaited") await write;
        } else if (step === "read") {
          await ctx.storage.get("n");
        } else {
          await world.s.schedule(Promise.resolve(), "io");
        }
      }
      return new Response(String(world.issued));
    }
  };
}

/** Runs the programs as concurrent requests to one instance; resolves with the final stored counters. */
async function run(world: World, programs: Step[][], gates: GateSettings): Promise<{ n: number; m: number }> {
  const store = new ScheduledStore(world);
  const table = new InstanceTable({
    classes: new Map([["/p", subject(world, programs)]]),
    store,
    maxInstances: 10,
    refusal: () => null,
    lapsed: () => false,
    log: memoryLogger(),
    now: Date.now,
    gates,
  });
  const answers = programs.map(async (_, i) => {
    await world.s.schedule(Promise.resolve(), `arrive#${i}`);
    const live = await table.acquire("/p", "x", "1");
    try {
      const response = await live.answer(() =>
        live.instance!.fetch(
          new Request(`http://worker/p/x?p=${i}`),
          new RequestContextImpl(live, "", {} as AttestationClaims),
        ),
      );
      const writtenBefore = Number(await response.text());
      for (let w = 1; w <= writtenBefore; w++) {
        if (!world.acked.has(w)) world.violations.push(`answer ${i} left before write ${w} was acknowledged`);
      }
    } finally {
      live.leave();
    }
  });
  let done = false;
  const all = Promise.all(answers).finally(() => (done = true));
  for (let turns = 0; !done; turns++) {
    if (turns > 10_000) throw new Error("the programs never finished");
    await world.s.waitAll();
    await new Promise((resolve) => setImmediate(resolve));
  }
  await all;
  const [n, m] = await new MemoryDurabilityStore().get.call(store, { ns: "/p", id: "x" }, ["n", "m"]);
  return { n: Number(n ?? 0), m: Number(m ?? 0) };
}

function gateProperty(gates: GateSettings) {
  return fc.asyncProperty(
    fc.scheduler(),
    fc.array(fc.array(step, { maxLength: 5 }), { minLength: 1, maxLength: 6 }),
    async (s, programs) => {
      const world: World = { s, issued: 0, acked: new Set(), violations: [] };
      const { n, m } = await run(world, programs, gates);
      const count = (...kinds: Step[]) => programs.flat().filter((k) => kinds.includes(k)).length;
      if (world.violations.length > 0) throw new Error(world.violations.join("; "));
      expect(n).toBe(count("incr"));
      expect(m).toBe(count("memIncr", "memIncrAwaited"));
    },
  );
}

describe("the gates as a property", () => {
  it("lose no update and release no answer before its writes, in any interleaving", async () => {
    await fc.assert(gateProperty(GATES_ON), { numRuns: 300 });
  });

  it("fail without the input gate (allowConcurrency): the property finds a lost update", async () => {
    // Up to 3,000 runs: the search stops at the first failure (usually within the first hundred),
    // so the control cannot miss for want of runs.
    const result = await fc.check(gateProperty({ ...GATES_ON, allowConcurrency: true }), { numRuns: 3000 });
    expect(result.failed).toBe(true);
    expect(String(result.errorInstance)).toMatch(/expected \d+ to be \d+/);
  });

  it("fail without the output gate (allowUnconfirmed): the property finds an answer released before its write", async () => {
    // Up to 3,000 runs, as above (300 once missed it on a loaded machine).
    const result = await fc.check(gateProperty({ ...GATES_ON, allowUnconfirmed: true }), { numRuns: 3000 });
    expect(result.failed).toBe(true);
    expect(String(result.errorInstance)).toContain("left before write");
  });
});
