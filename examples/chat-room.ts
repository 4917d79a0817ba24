/**
 * A chat room over WebSocket: every room is one instance, every message is broadcast to the
 * room's sockets and kept in durable storage, so the history survives the room moving to
 * another worker.
 *
 *   GET  /chat/{room}?name=alice   with Upgrade: websocket → joins the room
 *        ← {"type":"history","messages":[…]}  then {"type":"join"|"leave"|"message",…}
 *        → any text frame is a message
 *   GET  /chat/{room}              → {"room","online":[names],"messages":[…]}
 *   POST /chat/{room}/messages     body {"name":"bob","text":"hi"} → posts without a socket
 *
 * For Durable Objects developers: `ctx.acceptWebSocket(request)` plays the part of
 * `state.acceptWebSocket(server)` with the hibernation-style hooks `webSocketMessage` and
 * `webSocketClose` on the instance, and `ctx.getWebSockets(tag?)` lists the open ones. It
 * returns `{ socket, response }`; return `response` from fetch to complete the upgrade.
 * Sockets are not persisted: when the room moves to another worker, clients reconnect (Pinboard
 * routes them to the new owner) and get the stored history. WebSocket accept works on Node
 * through `worker.listen()` (or `createPinnedServer`).
 */
import type { Instance, InstanceContext, PinnedWebSocket, RequestContext } from "../src/pinned/index.ts";

const HISTORY = 100; // messages kept in storage per room
const BACKLOG = 50; // messages sent to a client when it joins

interface ChatMessage {
  seq: number;
  name: string;
  text: string;
  at: number;
}

const json = (body: unknown, status = 200): Response =>
  new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json" } });

/** Storage key of message `seq`, zero-padded so that key order is message order. */
const messageKey = (seq: number) => `msg:${String(seq).padStart(12, "0")}`;

const cleanName = (name: string | null | undefined) => (name ?? "").trim().slice(0, 32) || "anonymous";

export class ChatRoom implements Instance {
  /** Sequence number of the last stored message; undefined until loaded. */
  private seq: number | undefined;

  constructor(ctx: InstanceContext) {
    // No request (and no socket) is let in before the last sequence number is known.
    ctx.blockConcurrencyWhile(() => this.load(ctx)).catch(() => {});
  }

  async fetch(request: Request, ctx: RequestContext): Promise<Response> {
    const url = new URL(request.url);
    const isUpgrade = request.headers.get("upgrade")?.toLowerCase() === "websocket";

    if (isUpgrade && ctx.path === "") {
      const name = cleanName(url.searchParams.get("name"));
      // Tags label sockets for ctx.getWebSockets(tag); attachment is free per-socket data.
      const { socket, response } = ctx.acceptWebSocket(request, { tags: [name] });
      socket.attachment = { name };
      // Sends before the handshake completes are queued, so the backlog arrives first.
      socket.send(JSON.stringify({ type: "history", room: ctx.id, messages: await this.history(ctx) }));
      this.broadcast(ctx, { type: "join", name });
      return response;
    }

    if (request.method === "GET" && ctx.path === "") {
      const online = ctx.getWebSockets().map((s) => (s.attachment as { name: string }).name);
      return json({ room: ctx.id, online, messages: await this.history(ctx) });
    }

    if (request.method === "POST" && ctx.path === "/messages") {
      const body = (await request.json().catch(() => null)) as { name?: string; text?: string } | null;
      if (!body || typeof body.text !== "string" || body.text.trim() === "") {
        return json({ error: 'expected {"name": string, "text": string}' }, 400);
      }
      return json(await this.post(ctx, cleanName(body.name), body.text), 201);
    }

    return json({ error: "not found" }, 404);
  }

  async webSocketMessage(socket: PinnedWebSocket, message: string | ArrayBuffer, ctx: InstanceContext): Promise<void> {
    const text = typeof message === "string" ? message : new TextDecoder().decode(message);
    if (text.trim() === "") return;
    try {
      await this.post(ctx, (socket.attachment as { name: string }).name, text);
    } catch {
      // Not stored (storage unreachable, or the room moved to a newer owner): tell the sender.
      socket.send(JSON.stringify({ type: "error", error: "message not stored, reconnect and retry" }));
    }
  }

  webSocketClose(socket: PinnedWebSocket, _code: number, _reason: string, ctx: InstanceContext): void {
    this.broadcast(ctx, { type: "leave", name: (socket.attachment as { name: string }).name });
  }

  /** Stores a message, trims the history and broadcasts it. */
  private async post(ctx: InstanceContext, name: string, text: string): Promise<ChatMessage> {
    const last = this.seq ?? (await this.load(ctx));
    // Taken synchronously, so concurrent messages get distinct sequence numbers.
    const seq = last + 1;
    this.seq = seq;
    const message: ChatMessage = { seq, name, text: text.slice(0, 2000), at: Date.now() };
    await ctx.storage.put(messageKey(seq), message);
    if (seq > HISTORY) await ctx.storage.delete(messageKey(seq - HISTORY));
    this.broadcast(ctx, { type: "message", ...message });
    return message;
  }

  private broadcast(ctx: InstanceContext, event: Record<string, unknown>): void {
    const frame = JSON.stringify(event);
    for (const peer of ctx.getWebSockets()) {
      try {
        peer.send(frame);
      } catch {
        // The peer is closing; its webSocketClose hook follows.
      }
    }
  }

  private async history(ctx: InstanceContext): Promise<ChatMessage[]> {
    // Newest first with a limit, then back into chronological order.
    const newest = await ctx.storage.list<ChatMessage>({ prefix: "msg:", reverse: true, limit: BACKLOG });
    return [...newest.values()].reverse();
  }

  private async load(ctx: InstanceContext): Promise<number> {
    const [last] = (await ctx.storage.list<ChatMessage>({ prefix: "msg:", reverse: true, limit: 1 })).values();
    this.seq ??= last?.seq ?? 0;
    return this.seq;
  }
}
