import type { Instance, RequestContext } from "../../src/pinned/index.ts";
import { Echo } from "./echo-instance.ts";
import { gate } from "./gates.ts";
import { Counter } from "./sample-instances.ts";

const json = (body: unknown, status = 200) =>
  new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json" } });

const text = new TextEncoder();

/**
 * Echo (test/support/echo-instance.ts) with two ways to keep a request in flight until the test
 * opens a gate (test/support/gates.ts) of this process:
 *   `?hold=NAME`     waits at gate NAME before answering anything (no headers until then);
 *   `?holdBody=NAME` answers 200 at once with a first line "held\n", then holds the rest of the
 *                    body ("released\n") until gate NAME opens.
 * Every other request is Echo's.
 */
export class HeldEcho extends Echo {
  override async fetch(request: Request, ctx: RequestContext): Promise<Response> {
    const url = new URL(request.url);
    const hold = url.searchParams.get("hold");
    if (hold) await gate(hold).pass();
    const holdBody = url.searchParams.get("holdBody");
    if (holdBody) {
      this.hits++;
      const held = gate(holdBody);
      return new Response(
        new ReadableStream<Uint8Array>({
          start(controller) {
            controller.enqueue(text.encode("held\n"));
          },
          async pull(controller) {
            await held.pass();
            controller.enqueue(text.encode("released\n"));
            controller.close();
          },
        }),
        { headers: { "content-type": "text/plain; charset=utf-8" } },
      );
    }
    return super.fetch(request, ctx);
  }
}

/**
 * Counter (test/support/sample-instances.ts) plus
 *   POST …/held-increment?gate=NAME → reads the count, waits at gate NAME, then stores count + 1
 * (a read-modify-write held open for exactly as long as the test wants).
 */
export class HeldCounter extends Counter {
  override async fetch(request: Request, ctx: RequestContext): Promise<Response> {
    if (request.method === "POST" && ctx.path === "/held-increment") {
      this.memoryHits++;
      const count = ((await ctx.storage.get<number>("count")) ?? 0) + 1;
      await gate(new URL(request.url).searchParams.get("gate") ?? "").pass();
      await ctx.storage.put("count", count);
      return json({ count, epoch: ctx.epoch });
    }
    return super.fetch(request, ctx);
  }
}

/**
 * An instance whose gate (one per ns/id, in the worker's process) is driven over HTTP, for
 * worker processes the test cannot reach into:
 *   POST …/hold → waits until the gate opens, then { released: true }
 *   POST …/open → opens the gate: { opened: true }
 *   GET  …/     → { waiting, arrivals, open }
 */
export class Held implements Instance {
  async fetch(request: Request, ctx: RequestContext): Promise<Response> {
    const held = gate(`${ctx.ns}/${ctx.id}`);
    if (request.method === "POST" && ctx.path === "/hold") {
      await held.pass();
      return json({ released: true });
    }
    if (request.method === "POST" && ctx.path === "/open") {
      held.open();
      return json({ opened: true });
    }
    return json({ waiting: held.waiting, arrivals: held.arrivals, open: held.isOpen });
  }
}
