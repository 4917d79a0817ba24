/**
 * `npm run demo -- --script`: the demo's story without a human. Increments a counter through
 * Pinboard, posts to a chat room over a WebSocket, finds the worker that owns the counter,
 * SIGKILLs it, waits for its lease to run out and reads both again through Pinboard: they are
 * served by the other worker, at a newer placement epoch, with their state intact.
 */
import WebSocket from "ws";
import { expectJson, fetchWithRetry, retryReads, sleep } from "./http.ts";
import type { DemoStack, DemoWorker } from "./stack.ts";

const COUNTER = { ns: "/counter", id: "demo" };
const ROOM = { ns: "/chat", id: "lobby" };
const INCREMENTS = 3;

interface CounterView {
  count: number;
  epoch: string;
}

interface ChatView {
  messages: { name: string; text: string }[];
}

export async function runStory(stack: DemoStack, say: (line: string) => void): Promise<void> {
  const base = stack.pinboardUrl;
  const counterUrl = `${base}${COUNTER.ns}/${COUNTER.id}`;
  const roomUrl = `${base}${ROOM.ns}/${ROOM.id}`;
  const onRetry = (what: string, waitMs: number) => say(`  pinboard answered ${what}; retrying in ${waitMs} ms`);

  say(`POST ${COUNTER.ns}/${COUNTER.id}/increment ×${INCREMENTS} through Pinboard`);
  for (let i = 0; i < INCREMENTS; i++) {
    // A fresh Redis refuses new placements for one lease (503 registry cold start, Retry-After):
    // 503s are never executed, so retrying a POST on them is safe.
    const res = await fetchWithRetry(`${counterUrl}/increment`, { method: "POST" }, { onRetry });
    const body = await expectJson<CounterView>(res, "increment");
    say(`  → count ${body.count}`);
  }
  const before = await expectJson<CounterView>(await fetchWithRetry(counterUrl, {}, { onRetry }), "read counter");
  const owner = await ownerOf(stack, COUNTER);
  say(
    `counter ${COUNTER.ns}/${COUNTER.id} = ${before.count}, owned by ${owner.name} (pid ${owner.pid}, epoch ${before.epoch})`,
  );

  const text = `hello from the demo at ${new Date().toISOString()}`;
  await expectJson<ChatView>(await fetchWithRetry(roomUrl, {}, { onRetry }), "read chat room");
  await chatOnce(`${roomUrl.replace(/^http/, "ws")}?name=demo`, text);
  const roomOwner = await ownerOf(stack, ROOM);
  say(`chat room ${ROOM.ns}/${ROOM.id}: sent "${text}" over a WebSocket, owned by ${roomOwner.name}`);

  say(`SIGKILL ${owner.name} (pid ${owner.pid}): no drain, no deregister`);
  owner.child.kill("SIGKILL");
  await owner.exited;
  say(`waiting for its lease (${stack.leaseMs} ms) to run out; Pinboard answers 502/503 meanwhile`);

  const started = Date.now();
  const after = await expectJson<CounterView>(
    await fetchWithRetry(counterUrl, {}, { retry: retryReads, timeoutMs: 30_000, onRetry }),
    "read counter after the kill",
  );
  const newOwner = await ownerOf(stack, COUNTER, owner);
  say(
    `counter ${COUNTER.ns}/${COUNTER.id} = ${after.count}, owned by ${newOwner.name} (pid ${newOwner.pid}, epoch ${after.epoch})`,
  );
  say(`  served again ${((Date.now() - started) / 1000).toFixed(1)} s after the kill`);

  const room = await expectJson<ChatView>(
    await fetchWithRetry(roomUrl, {}, { retry: retryReads, timeoutMs: 30_000, onRetry }),
    "read chat room after the kill",
  );
  const roomOwnerAfter = await ownerOf(stack, ROOM, roomOwner === owner ? owner : undefined);
  const kept = room.messages.some((m) => m.text === text);
  say(
    `chat room ${ROOM.ns}/${ROOM.id}: ${room.messages.length} message(s) in its history, owned by ${roomOwnerAfter.name}`,
  );

  const problems: string[] = [];
  if (after.count !== before.count) problems.push(`count changed: ${before.count} → ${after.count}`);
  if (newOwner === owner) problems.push("the owner did not change");
  if (BigInt(after.epoch) <= BigInt(before.epoch))
    problems.push(`the epoch did not grow: ${before.epoch} → ${after.epoch}`);
  if (!kept) problems.push("the chat message is missing from the room's history");
  if (problems.length) throw new Error(`the story failed: ${problems.join("; ")}`);
  say(
    `ok: ${COUNTER.ns}/${COUNTER.id} moved from ${owner.name} to ${newOwner.name} with its state intact (count ${after.count})`,
  );
}

/**
 * The worker that owns (ns, id), from the operator overview; with `not`, waits until the owner
 * is another worker (the dead one stays listed until its lease runs out).
 */
async function ownerOf(stack: DemoStack, at: { ns: string; id: string }, not?: DemoWorker): Promise<DemoWorker> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const owner = await stack.operator.owner(at.ns, at.id);
    const worker = owner && stack.workers.find((w) => w.name === owner.clientId);
    if (worker && worker !== not) return worker;
    if (Date.now() > deadline) throw new Error(`no ${not ? "new " : ""}owner of ${at.ns}/${at.id} in the overview`);
    await sleep(200);
  }
}

/** Joins a chat room, sends one message, waits for its broadcast, and leaves. */
function chatOnce(url: string, text: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(url);
    const timer = setTimeout(() => {
      socket.terminate();
      reject(new Error(`chat: no broadcast of the message within 10 s (${url})`));
    }, 10_000);
    const fail = (err: Error) => {
      clearTimeout(timer);
      socket.terminate();
      reject(err);
    };
    socket.on("unexpected-response", (_req, res) => fail(new Error(`chat: upgrade answered HTTP ${res.statusCode}`)));
    socket.on("error", fail);
    socket.on("message", (data) => {
      const event = JSON.parse(String(data)) as { type: string; text?: string };
      if (event.type === "history") socket.send(text);
      if (event.type === "message" && event.text === text) {
        clearTimeout(timer);
        socket.close(1000, "bye");
        resolve();
      }
    });
  });
}
