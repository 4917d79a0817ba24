import type { Instance, InstanceContext, RequestContext } from "../../src/pinned/index.ts";

const json = (body: unknown, status = 200) =>
  new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json" } });

/**
 * A durable counter that says who answered: every answer carries the activation's epoch and the
 * worker process's name (WORKER_NAME) and pid, so a test can check that one (id, epoch) was only
 * ever served by one worker.
 *   POST …/increment → { count, epoch, worker, pid } after storing count + 1 (epoch-fenced)
 *   GET  …/          → { count, epoch, worker, pid }
 */
export class IdentityCounter implements Instance {
  constructor(readonly ctx: InstanceContext) {}

  async fetch(request: Request, ctx: RequestContext): Promise<Response> {
    const who = { epoch: ctx.epoch, worker: process.env.WORKER_NAME ?? "", pid: process.pid };
    if (request.method === "POST" && ctx.path === "/increment") {
      const count = ((await ctx.storage.get<number>("count")) ?? 0) + 1;
      await ctx.storage.put("count", count);
      return json({ count, ...who });
    }
    return json({ count: (await ctx.storage.get<number>("count")) ?? 0, ...who });
  }
}
