/**
 * A durable counter: the "hello world" of stateful instances.
 *
 * If you know Cloudflare Durable Objects, this is the same shape: one object per id, created on
 * the first request for that id, with `fetch(request, ctx)` and a transactional-ish storage API.
 * Pinboard routes `/{namespace}/{id}/…` to the one worker that owns the id; the worker library
 * (pinboard/pinned) keeps one Counter object per id in memory on that worker.
 *
 *   GET  /counter/{id}                          → {"id","count","epoch","alarm","resets"}
 *   POST /counter/{id}/increment                → adds one, answers the new count
 *   POST /counter/{id}/reset-after?seconds=N    → arms an alarm that resets the count in N s
 *   DELETE /counter/{id}/reset-after            → cancels the alarm
 *
 * Differences from Durable Objects worth knowing:
 *  - There are no input/output gates. Two requests for the same id run concurrently and
 *    interleave at every `await`; keep hot state in memory and change it synchronously, as
 *    below, or serialise with `ctx.blockConcurrencyWhile`.
 *  - Storage values are JSON (whatever `JSON.stringify` keeps comes back from `get`).
 *  - Every write carries the placement epoch this object was activated at. If Pinboard has
 *    meanwhile moved the id to another worker (a newer epoch), the write is refused with
 *    StaleEpochError, the library drops this object and the request answers 409: a stale
 *    owner can never overwrite the new owner's state.
 */
import type { AlarmInfo, Instance, InstanceContext, InstanceStorage, RequestContext } from "../src/pinned/index.ts";

const json = (body: unknown, status = 200): Response =>
  new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json" } });

export class Counter implements Instance {
  /** The count as this object knows it; undefined until loaded from storage. */
  private count: number | undefined;

  constructor(ctx: InstanceContext) {
    // Like `state.blockConcurrencyWhile` in a Durable Object's constructor: no request is let in
    // before the stored count is loaded. If loading fails (storage unreachable), fetch retries.
    ctx.blockConcurrencyWhile(() => this.load(ctx.storage)).catch(() => {});
  }

  async fetch(request: Request, ctx: RequestContext): Promise<Response> {
    // ctx.path is what follows /counter/{id}: "" or "/increment", "/reset-after", …
    const route = `${request.method} ${ctx.path || "/"}`;
    switch (route) {
      case "GET /":
        return json(await this.describe(ctx));

      case "POST /increment": {
        const current = this.count ?? (await this.load(ctx.storage));
        // Synchronous read-modify-write: concurrent increments cannot lose each other.
        const next = current + 1;
        this.count = next;
        try {
          await ctx.storage.put("count", next);
        } catch (err) {
          // The write did not land (storage down, or a newer owner fenced us out): forget the
          // in-memory value so the next request starts again from what storage holds.
          this.count = undefined;
          throw err;
        }
        return json({ id: ctx.id, count: next, epoch: ctx.epoch });
      }

      case "POST /reset-after": {
        const seconds = Number(new URL(request.url).searchParams.get("seconds") ?? "10");
        if (!Number.isFinite(seconds) || seconds < 0) return json({ error: "seconds must be a number ≥ 0" }, 400);
        // One alarm per instance, stored with it (like Durable Objects' setAlarm). The owning
        // worker fires it from its own timer; if that worker dies, the next owner or Pinboard's
        // sweeper fires it, so the alarm survives the move.
        await ctx.setAlarm(Date.now() + seconds * 1000);
        return json({ id: ctx.id, alarm: await ctx.getAlarm() });
      }

      case "DELETE /reset-after":
        await ctx.deleteAlarm();
        return json({ id: ctx.id, alarm: null });

      default:
        return json({ error: `no route ${route}` }, 404);
    }
  }

  /** Runs when the alarm is due. A throw is retried with backoff (1 s, 2 s, 4 s, …). */
  async alarm(ctx: InstanceContext, info: AlarmInfo): Promise<void> {
    const resets = ((await ctx.storage.get<number>("resets")) ?? 0) + 1;
    this.count = 0;
    await ctx.storage.put({ count: 0, resets });
    console.log(`counter ${ctx.id}: reset by its alarm${info.isRetry ? ` (retry ${info.retryCount})` : ""}`);
  }

  private async describe(ctx: RequestContext) {
    return {
      id: ctx.id,
      count: this.count ?? (await this.load(ctx.storage)),
      // The placement epoch: it grows every time the id is placed on a (new) worker.
      epoch: ctx.epoch,
      alarm: await ctx.getAlarm(),
      resets: (await ctx.storage.get<number>("resets")) ?? 0,
    };
  }

  private async load(storage: InstanceStorage): Promise<number> {
    const stored = await storage.get<number>("count");
    // Another request may have loaded (and incremented) meanwhile: never go back in time.
    this.count ??= stored ?? 0;
    return this.count;
  }
}
