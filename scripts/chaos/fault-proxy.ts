import { type AddressInfo, createConnection, createServer, type Server, type Socket } from "node:net";

/**
 * A TCP proxy on loopback that the nemesis switches between network faults, one per link of the
 * topology (a Pinboard node to Redis, Pinboard to a worker, a worker to its store):
 *   - pass: bytes flow;
 *   - delay: each chunk leaves delayMs after it arrived, in order, both ways;
 *   - drop: a partition: nothing crosses either way and nothing is closed; what was sent meanwhile
 *     is held and delivered, in order, once the link passes again, as TCP retransmits after a
 *     partition shorter than its timeout (a byte stream never loses bytes in the middle);
 *   - blackhole: the link's state is lost: every connection open now, and each new one (accepted,
 *     never connected upstream), stays silent for good, even after the link passes again, so only
 *     the endpoints' own timeouts can tell it is dead;
 *   - reset: every open connection is reset (RST) both ways, and so is each new one.
 * Back to pass, new connections flow, held bytes are delivered, and a connection whose peer
 * closed meanwhile is closed now.
 */

export type ProxyMode = "pass" | "delay" | "drop" | "blackhole" | "reset";

export const DEFAULT_DELAY_MS = 500;

export interface FaultProxy {
  readonly name: string;
  /** The port it listens on, on 127.0.0.1. */
  readonly port: number;
  readonly targetHost: string;
  readonly targetPort: number;
  readonly mode: ProxyMode;
  readonly delayMs: number;
  /** delayMs applies to "delay" (default DEFAULT_DELAY_MS). */
  setMode(mode: ProxyMode, delayMs?: number): void;
  /** Chunks held by a partition ("drop") on their way to the target: requests waiting to cross. */
  heldTowardsTarget(): number;
  /** Destroys every socket and closes the server. */
  close(): Promise<void>;
}

interface ProxyState {
  mode: ProxyMode;
  delayMs: number;
}

/** One direction of a link: a FIFO of chunks, each leaving at its due time or after the one before it. */
interface Direction {
  from: Socket;
  to: Socket;
  queue: Array<{ chunk: Buffer; due: number }>;
  timer: NodeJS.Timeout | undefined;
  /** The sender half-closed; the FIN goes on once the queue is empty (and bytes pass). */
  ended: boolean;
}

interface Link {
  client: Socket;
  /** Blackholed: silent for good. */
  dead: boolean;
  /** Absent when the connection came in blackholed. */
  upstream?: Socket;
  directions: Direction[];
}

const passes = (state: ProxyState) => state.mode === "pass" || state.mode === "delay";

export async function startFaultProxy(
  name: string,
  targetHost: string,
  targetPort: number,
  listenPort = 0,
): Promise<FaultProxy> {
  const state: ProxyState = { mode: "pass", delayMs: DEFAULT_DELAY_MS };
  const links = new Set<Link>();
  const server: Server = createServer({ allowHalfOpen: true }, (client) =>
    accept(client, state, links, targetHost, targetPort),
  );
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(listenPort, "127.0.0.1", () => {
      server.off("error", reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  return {
    name,
    port,
    targetHost,
    targetPort,
    get mode() {
      return state.mode;
    },
    get delayMs() {
      return state.delayMs;
    },
    setMode(mode: ProxyMode, delayMs?: number) {
      state.mode = mode;
      if (mode === "delay") state.delayMs = delayMs ?? DEFAULT_DELAY_MS;
      if (mode === "reset") for (const link of links) resetLink(link);
      if (mode === "blackhole") for (const link of links) killLink(link);
      if (passes(state)) for (const link of links) revive(link, state);
    },
    heldTowardsTarget: () => {
      let held = 0;
      for (const link of links) for (const item of link.directions[0]?.queue ?? []) if (item.due === HELD) held++;
      return held;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const link of links) {
          for (const direction of link.directions) clearTimeout(direction.timer);
          link.client.destroy();
          link.upstream?.destroy();
        }
        links.clear();
        server.close(() => resolve());
      }),
  };
}

function accept(client: Socket, state: ProxyState, links: Set<Link>, host: string, port: number): void {
  client.on("error", () => {});
  if (state.mode === "reset") {
    resetSocket(client);
    return;
  }
  const link: Link = { client, dead: false, directions: [] };
  links.add(link);
  if (state.mode === "blackhole") {
    link.dead = true;
    client.on("data", () => {});
    client.on("close", () => links.delete(link));
    return;
  }
  const upstream = createConnection({ host, port, allowHalfOpen: true });
  upstream.on("error", () => {});
  link.upstream = upstream;
  link.directions = [forward(client, upstream, state, link), forward(upstream, client, state, link)];
  const onClose = (closed: Socket, other: Socket) => (hadError: boolean) => {
    if (client.destroyed && upstream.destroyed) {
      links.delete(link);
      for (const direction of link.directions) clearTimeout(direction.timer);
    }
    // While partitioned, a close is news that never arrives: the peer keeps its socket until we pass
    // again; on a blackholed link it never arrives.
    if (!passes(state) || link.dead) return;
    if (hadError) {
      resetSocket(other);
      return;
    }
    // A clean close: the FIN follows the bytes still queued towards the other side.
    const outgoing = link.directions.find((direction) => direction.from === closed)!;
    outgoing.ended = true;
    if (outgoing.timer === undefined) flush(outgoing, state);
  };
  client.on("close", onClose(client, upstream));
  upstream.on("close", onClose(upstream, client));
}

/** Held while the link is partitioned: delivered when it passes again. */
const HELD = Number.POSITIVE_INFINITY;

function forward(from: Socket, to: Socket, state: ProxyState, link: Link): Direction {
  const direction: Direction = { from, to, queue: [], timer: undefined, ended: false };
  from.on("data", (chunk: Buffer) => {
    if (link.dead) return;
    if (state.mode === "drop") {
      direction.queue.push({ chunk, due: HELD });
      return;
    }
    const delay = state.mode === "delay" ? state.delayMs : 0;
    const due = Math.max(Date.now() + delay, direction.queue.at(-1)?.due ?? 0);
    direction.queue.push({ chunk, due });
    if (direction.timer === undefined) flush(direction, state);
  });
  from.on("end", () => {
    direction.ended = true;
    if (direction.timer === undefined) flush(direction, state);
  });
  return direction;
}

/** Sends every chunk that is due; while the link does not pass, chunks wait (revive() sends them on). */
function flush(direction: Direction, state: ProxyState): void {
  direction.timer = undefined;
  const { queue, to } = direction;
  if (!passes(state)) return;
  while (queue.length > 0 && queue[0]!.due <= Date.now()) {
    const { chunk } = queue.shift()!;
    if (to.writable) to.write(chunk);
  }
  if (queue.length > 0) direction.timer = setTimeout(() => flush(direction, state), queue[0]!.due - Date.now());
  else if (direction.ended && to.writable) to.end();
}

/** Back to passing: deliver what was held, then the FIN or close that arrived while partitioned. */
function revive(link: Link, state: ProxyState): void {
  const { client, upstream } = link;
  if (upstream === undefined || link.dead) return;
  const now = Date.now();
  for (const direction of link.directions) for (const item of direction.queue) if (item.due === HELD) item.due = now;
  if (client.destroyed !== upstream.destroyed) {
    client.destroy();
    upstream.destroy();
    return;
  }
  for (const direction of link.directions) if (direction.timer === undefined) flush(direction, state);
}

/** The link's state is lost: nothing it holds or receives is ever delivered. */
function killLink(link: Link): void {
  link.dead = true;
  for (const direction of link.directions) {
    clearTimeout(direction.timer);
    direction.timer = undefined;
    direction.queue.length = 0;
  }
}

function resetLink(link: Link): void {
  for (const direction of link.directions) {
    clearTimeout(direction.timer);
    direction.queue.length = 0;
  }
  resetSocket(link.client);
  if (link.upstream !== undefined) resetSocket(link.upstream);
}

/** RST rather than FIN: the peer sees ECONNRESET, as when a host or middlebox drops the connection. */
function resetSocket(socket: Socket): void {
  if (socket.destroyed) return;
  try {
    socket.resetAndDestroy();
  } catch {
    socket.destroy();
  }
}
