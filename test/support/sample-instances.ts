import type { AlarmInfo, Instance, InstanceContext, PinnedWebSocket, RequestContext } from "../../src/pinned/index.ts";

const json = (body: unknown, status = 200) =>
  new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json" } });

/** What Counter answers: GET … gives every field, POST …/increment the count and the epoch. */
export interface CounterAnswer {
  count: number;
  epoch: string;
  memoryHits?: number;
  path?: string;
  ns?: string;
  id?: string;
}

/**
 * A durable counter. `memoryHits` lives only in the instance object, so it shows whether a
 * request reached the same activation or a fresh one (re-hydrated from storage).
 *   GET  …/            → { count, memoryHits, epoch, path }
 *   POST …/increment   → count + 1 (stored)
 *   POST …/slow?ms=N   → answers after N ms (for in-flight tests)
 *   POST …/slow-increment?ms=N → reads, waits N ms, writes count + 1
 *   POST …/alarm?in=N  → setAlarm(now + N)
 *   POST …/delete-all  → storage.deleteAll()
 *   GET  …/whoami      → the attestation claims
 */
export class Counter implements Instance {
  static constructed = 0;
  memoryHits = 0;

  constructor(readonly ctx: InstanceContext) {
    Counter.constructed++;
  }

  async fetch(request: Request, ctx: RequestContext): Promise<Response> {
    this.memoryHits++;
    const url = new URL(request.url);
    const storage = ctx.storage;
    if (request.method === "POST" && ctx.path === "/increment") {
      const count = ((await storage.get<number>("count")) ?? 0) + 1;
      await storage.put("count", count);
      return json({ count, epoch: ctx.epoch });
    }
    if (request.method === "POST" && ctx.path === "/slow-increment") {
      const count = ((await storage.get<number>("count")) ?? 0) + 1;
      await new Promise((r) => setTimeout(r, Number(url.searchParams.get("ms") ?? 100)));
      await storage.put("count", count);
      return json({ count, epoch: ctx.epoch });
    }
    if (request.method === "POST" && ctx.path === "/slow") {
      await new Promise((r) => setTimeout(r, Number(url.searchParams.get("ms") ?? 100)));
      return json({ slept: true });
    }
    if (request.method === "POST" && ctx.path === "/alarm") {
      await ctx.setAlarm(Date.now() + Number(url.searchParams.get("in") ?? 0));
      return json({ alarm: await ctx.getAlarm() });
    }
    if (request.method === "POST" && ctx.path === "/delete-all") {
      await storage.deleteAll();
      return json({ alarm: await ctx.getAlarm() });
    }
    if (ctx.path === "/whoami") return json(ctx.attestation);
    return json({
      count: (await storage.get<number>("count")) ?? 0,
      memoryHits: this.memoryHits,
      epoch: ctx.epoch,
      path: ctx.path,
      ns: ctx.ns,
      id: ctx.id,
    });
  }

  async alarm(ctx: InstanceContext, info: AlarmInfo): Promise<void> {
    const fired = ((await ctx.storage.get<number>("alarms")) ?? 0) + 1;
    await ctx.storage.put("alarms", fired);
    await ctx.storage.put("lastAlarmInfo", info);
    const mode = await ctx.storage.get<string>("alarmMode");
    if (mode === "throw-once" && !info.isRetry) throw new Error("alarm failed on purpose");
    if (mode === "slow") await new Promise((r) => setTimeout(r, 500));
    if (mode === "reschedule" && fired === 1) await ctx.setAlarm(Date.now() + 50);
  }
}

/** A chat room: every message is broadcast to every socket of the room and kept in storage. */
export class Room implements Instance {
  constructor(readonly ctx: InstanceContext) {}

  async fetch(request: Request, ctx: RequestContext): Promise<Response> {
    if (request.headers.get("upgrade")?.toLowerCase() !== "websocket") {
      return json({
        messages: (await ctx.storage.get<string[]>("messages")) ?? [],
        sockets: ctx.getWebSockets().length,
      });
    }
    const name = new URL(request.url).searchParams.get("name") ?? "anon";
    const { socket, response } = ctx.acceptWebSocket(request, { tags: [name] });
    socket.attachment = { name };
    socket.send(JSON.stringify({ hello: name, epoch: ctx.epoch }));
    return response;
  }

  async webSocketMessage(socket: PinnedWebSocket, message: string | ArrayBuffer, ctx: InstanceContext): Promise<void> {
    const text = typeof message === "string" ? message : new TextDecoder().decode(message);
    const from = (socket.attachment as { name: string }).name;
    const messages = (await ctx.storage.get<string[]>("messages")) ?? [];
    messages.push(`${from}: ${text}`);
    await ctx.storage.put("messages", messages);
    for (const peer of ctx.getWebSockets()) peer.send(JSON.stringify({ from, text }));
  }
}

/** Takes `ms` (from the constructor's blockConcurrencyWhile) to activate. */
export class Slow implements Instance {
  ready = false;
  constructor(ctx: InstanceContext) {
    void ctx.blockConcurrencyWhile(async () => {
      const ms = Number((await ctx.storage.get<number>("activationMs")) ?? 300);
      await new Promise((r) => setTimeout(r, ms));
      this.ready = true;
    });
  }
  fetch(): Response {
    return json({ ready: this.ready });
  }
}
