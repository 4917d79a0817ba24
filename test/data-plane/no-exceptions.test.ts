import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import "../../scripts/lua/all-scripts.generated.ts";
import { registeredScripts } from "../../src/contract/lua-script.ts";
import { CENSUS } from "../support/error-census.ts";
import { type Fleet, startFleet } from "../support/fleet.ts";
import { until } from "../support/local-worker.ts";

/**
 * The "no Error objects on a successful forward", checked from outside the process: the
 * real Node entry runs with its inspector open, and the test, as its debugger, pauses on every
 * exception (caught ones included) and on every rejected promise, notes where, and resumes. An
 * error made and never thrown raises nothing, so the process also runs with an error census
 * (test/support/error-census.ts) that counts every error object constructed in it, read over the
 * same inspector. Forwards to live placements must raise none and make none; a request Pinboard
 * refuses raises and makes its error, which proves both watches see them.
 */

interface Pause {
  reason: string;
  what: string;
  where: string;
}

/** A Chrome DevTools Protocol client on the inspector's WebSocket that notes and resumes every pause. */
class ExceptionWatch {
  readonly pauses: Pause[] = [];
  private nextId = 1;
  private readonly waiting = new Map<number, (result: unknown) => void>();

  private constructor(private readonly socket: WebSocket) {
    socket.on("message", (data: Buffer) => {
      const message = JSON.parse(data.toString()) as {
        id?: number;
        result?: unknown;
        method?: string;
        params?: {
          reason: string;
          data?: { className?: string; description?: string; value?: unknown };
          callFrames: Array<{ functionName: string; url: string; location: { lineNumber: number } }>;
        };
      };
      if (message.id !== undefined) this.waiting.get(message.id)?.(message.result);
      if (message.method === "Debugger.paused" && message.params) {
        const { reason, data, callFrames } = message.params;
        const top = callFrames
          .slice(0, 4)
          .map(
            (f) =>
              `${f.functionName || "(anonymous)"} ${f.url.replace(/^.*\/(src|node_modules)\//, "$1/")}:${f.location.lineNumber + 1}`,
          );
        this.pauses.push({
          reason,
          what: String(data?.description ?? data?.value ?? data?.className ?? "?").split("\n")[0]!,
          where: top.join(" < "),
        });
        void this.send("Debugger.resume");
      }
    });
  }

  static async open(url: string): Promise<ExceptionWatch> {
    const socket = new WebSocket(url);
    await new Promise<void>((resolve, reject) => {
      socket.once("open", () => resolve());
      socket.once("error", reject);
    });
    const watch = new ExceptionWatch(socket);
    await watch.send("Debugger.enable");
    await watch.send("Debugger.setPauseOnExceptions", { state: "all" });
    return watch;
  }

  send(method: string, params: object = {}): Promise<unknown> {
    const id = this.nextId++;
    return new Promise((resolve) => {
      this.waiting.set(id, resolve);
      this.socket.send(JSON.stringify({ id, method, params }));
    });
  }

  /** The error census's sites since the last call (test/support/error-census.ts), emptied. */
  async errorsMade(): Promise<string[]> {
    const reply = (await this.send("Runtime.evaluate", {
      expression: `JSON.stringify(globalThis.${CENSUS}.sites.splice(0))`,
      returnByValue: true,
    })) as {
      result: { value?: string };
    };
    if (reply.result.value === undefined) throw new Error(`no error census in Pinboard: ${JSON.stringify(reply)}`);
    return JSON.parse(reply.result.value) as string[];
  }

  close(): void {
    this.socket.close();
  }
}

let fleet: Fleet;
let watch: ExceptionWatch;

beforeAll(async () => {
  fleet = await startFleet({
    workers: 1,
    nodeArgs: ["--inspect=127.0.0.1:0"],
    preloads: ["./test/support/error-census.ts"],
  });
  await fleet.skipColdStart();
  // A fresh Redis answers each script's first EVALSHA with NOSCRIPT (then Pinboard EVALs it): a
  // first use, not a forward's error, and one the rounds would meet whenever a background pass
  // (the worker's first heartbeat, a sweep) first runs during them. Every script is loaded first.
  for (const node of await fleet.t.primaries())
    for (const script of registeredScripts()) await node.script("LOAD", script.script);
  const url = /Debugger listening on (ws:\/\/\S+)/.exec(fleet.pb.output())?.[1];
  if (!url) throw new Error(`no inspector URL in Pinboard's output:\n${fleet.pb.output()}`);
  watch = await ExceptionWatch.open(url);
}, 60_000);

afterAll(async () => {
  watch?.close();
  await fleet?.close();
});

describe("a successful forward", () => {
  it("raises no exception, rejects no promise and makes no error in Pinboard, for GET, HEAD and POST to live placements", {
    timeout: 60_000,
  }, async () => {
    const ids = Array.from({ length: 20 }, (_, i) => `quiet-${i}`);
    // Places the ids and lets every lazy path (module loading, first compilations) run once.
    for (const id of ids) expect((await fetch(`${fleet.pb.url}/echo/${id}/warm`)).status).toBe(200);
    watch.pauses.length = 0;
    await watch.errorsMade();

    for (let round = 0; round < 10; round++) {
      for (const id of ids) {
        const get = await fetch(`${fleet.pb.url}/echo/${id}/read?round=${round}`);
        expect(get.status).toBe(200);
        await get.arrayBuffer();
      }
      const head = await fetch(`${fleet.pb.url}/echo/${ids[round]}/head`, { method: "HEAD" });
      expect(head.status).toBe(200);
      const post = await fetch(`${fleet.pb.url}/echo/${ids[round]}/write`, {
        method: "POST",
        body: "x".repeat(10_000),
      });
      expect(post.status).toBe(200);
      await post.arrayBuffer();
    }
    expect(watch.pauses).toEqual([]);
    // Pinboard's fetch (Node's bundled undici: the probes of registration and heartbeats) keeps
    // connections of its own and closes them on its own timers, making an error to do so; the Node
    // data plane never uses it, so what it makes in the background is not a forward's. The data
    // plane's own undici closes a connection the same way: after a HEAD whose answer has no length
    // and a Connection header other than exactly "keep-alive" (Echo names x-hop in it), it cannot
    // tell where the answer ends and closes the connection, making an InformationalError, and an
    // origin's last connection closing takes its pool with it (ClientDestroyedError). Neither is
    // thrown: the forward itself makes none.
    const closing = (site: string) =>
      /^(InformationalError .*Parser\.onMessageComplete|ClientDestroyedError .*\.destroy)/.test(site) &&
      site.includes("node_modules/undici/");
    expect(
      (await watch.errorsMade()).filter((site) => !site.includes("node:internal/deps/undici/") && !closing(site)),
    ).toEqual([]);
  });

  it("the watches do see the exception and the error of a refused request", { timeout: 30_000 }, async () => {
    watch.pauses.length = 0;
    await watch.errorsMade();
    const refused = await fetch(`${fleet.pb.url}/echo/${"x".repeat(300)}`);
    expect(refused.status).toBe(400);
    await until(() => watch.pauses.length > 0);
    expect(watch.pauses.some((p) => p.reason === "exception" || p.reason === "promiseRejection")).toBe(true);
    expect((await watch.errorsMade()).some((site) => site.startsWith("PinboardError"))).toBe(true);
  });
});
