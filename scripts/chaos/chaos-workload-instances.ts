/**
 * The chaos worker's WebSocket and alarm namespaces (chaos-worker.ts mounts them):
 *
 *   /sockets/{k}   GET with Upgrade: websocket accepts a socket and sends {hello, epoch, worker};
 *                  every text frame {msg} is logged as taken, then echoed {msg, epoch, worker}
 *   /alarms/{k}    GET answers {epoch, worker}; POST …/set?alarm=<id>&in=<ms> stores the alarm as pending and sets the
 *                  library's alarm to the earliest pending one; alarm() logs each due one as
 *                  fired, removes it from storage, then logs it committed
 *
 * Both logs are written synchronously (one JSON line, before the echo or the write), so what a
 * killed process did is on disk. Before each effect no fence guards (the log, the echo) the
 * instance asks ctx.isCurrent(), as the library asks of effects after a wait; the control run
 * (skipOwnerCheck, the is-current layer off) does not.
 */
import { closeSync, openSync, writeSync } from "node:fs";
import type {
  Instance,
  InstanceClass,
  InstanceContext,
  PinnedWebSocket,
  RequestContext,
} from "../../src/pinned/index.ts";
import type { AlarmFired } from "./history-alarms.ts";
import type { SocketTaken } from "./history-sockets.ts";

export interface WorkloadInstanceOptions {
  worker: string;
  skipOwnerCheck: boolean;
  socketLog: string;
  alarmLog: string;
}

interface PendingAlarm {
  alarm: string;
  at: number;
}

/** Retry of an alarm() that found its activation no longer current: a newer owner's fence decides. */
const NOT_CURRENT_RETRY_MS = 1000;

function syncLog(path: string): (entry: object) => void {
  const fd = openSync(path, "a");
  process.once("exit", () => closeSync(fd));
  return (entry) => writeSync(fd, `${JSON.stringify(entry)}\n`);
}

export function workloadNamespaces(options: WorkloadInstanceOptions): Record<string, InstanceClass> {
  const { worker } = options;
  const logTaken = syncLog(options.socketLog) as (entry: SocketTaken) => void;
  const logAlarm = syncLog(options.alarmLog) as (entry: AlarmFired) => void;
  const owner = (ctx: InstanceContext) => options.skipOwnerCheck || ctx.isCurrent();

  class ChaosSocket implements Instance {
    async fetch(request: Request, ctx: RequestContext): Promise<Response> {
      if (request.headers.get("upgrade")?.toLowerCase() !== "websocket")
        return Response.json({ epoch: ctx.epoch, worker });
      if (!owner(ctx)) return Response.json({ detail: "no longer the owner" }, { status: 503 });
      const { socket, response } = ctx.acceptWebSocket(request);
      socket.send(JSON.stringify({ hello: true, epoch: ctx.epoch, worker }));
      return response;
    }

    webSocketMessage(socket: PinnedWebSocket, message: string | ArrayBuffer, ctx: InstanceContext): void {
      if (typeof message !== "string") return;
      const { msg } = JSON.parse(message) as { msg: string };
      // A message that waited in the socket while the process was paused past its lease.
      if (!owner(ctx)) {
        socket.close(1012, "no longer the owner");
        return;
      }
      logTaken({ worker, key: `${ctx.ns}/${ctx.id}`, epoch: ctx.epoch, msg, at: Date.now() });
      socket.send(JSON.stringify({ msg, epoch: ctx.epoch, worker }));
    }
  }

  class ChaosAlarm implements Instance {
    async fetch(request: Request, ctx: RequestContext): Promise<Response> {
      if (request.method === "GET") return Response.json({ epoch: ctx.epoch, worker });
      const params = new URL(request.url).searchParams;
      const alarm = params.get("alarm");
      const delay = Number(params.get("in"));
      if (request.method !== "POST" || ctx.path !== "/set" || !alarm || !Number.isInteger(delay))
        return Response.json({ detail: "bad request" }, { status: 400 });
      const pending = (await ctx.storage.get<PendingAlarm[]>("pending")) ?? [];
      pending.push({ alarm, at: Date.now() + delay });
      await ctx.storage.put("pending", pending);
      await ctx.setAlarm(Math.min(...pending.map((p) => p.at)));
      return Response.json({ ok: true, epoch: ctx.epoch, worker });
    }

    async alarm(ctx: InstanceContext, info: { retryCount: number }): Promise<void> {
      const pending = (await ctx.storage.get<PendingAlarm[]>("pending")) ?? [];
      if (!owner(ctx)) return ctx.setAlarm(Date.now() + NOT_CURRENT_RETRY_MS);
      const now = Date.now();
      const key = `${ctx.ns}/${ctx.id}`;
      const entry = (alarm: string, phase: AlarmFired["phase"]): AlarmFired => ({
        worker,
        key,
        epoch: ctx.epoch,
        alarm,
        phase,
        retryCount: info.retryCount,
        at: Date.now(),
      });
      const due = pending.filter((p) => p.at <= now);
      for (const p of due) logAlarm(entry(p.alarm, "fired"));
      const rest = pending.filter((p) => p.at > now);
      await ctx.storage.put("pending", rest);
      if (rest.length > 0) await ctx.setAlarm(Math.min(...rest.map((p) => p.at)));
      for (const p of due) logAlarm(entry(p.alarm, "committed"));
    }
  }

  return { "/sockets": ChaosSocket, "/alarms": ChaosAlarm };
}
