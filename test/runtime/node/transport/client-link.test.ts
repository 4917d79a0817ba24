import { PassThrough } from "node:stream";
import { describe, expect, it } from "vitest";
import { socketLink } from "../../../../src/runtime/node/transport/client-link.ts";
import { collectGarbage as collect } from "../../../support/gc-on-demand.ts";

/** Lets pending finalisation and timers run between collections. */
const settle = () => new Promise((resolve) => setTimeout(resolve, 10));

/** Listens on the connection the way one forward does, and stops; a WeakRef to what its listener held. */
function forwardOn(socket: PassThrough): WeakRef<object> {
  const forward = { request: new Uint8Array(64 * 1024) };
  const stop = socketLink(socket).onGone(() => void forward.request.byteLength);
  stop();
  return new WeakRef(forward);
}

describe("socketLink", () => {
  it("a keep-alive connection keeps none of its finished forwards alive, the first one included", async () => {
    const socket = new PassThrough();
    const forwards = [forwardOn(socket), forwardOn(socket), forwardOn(socket)];
    for (let i = 0; i < 3; i++) {
      collect();
      await settle();
    }
    expect(forwards.map((f) => f.deref() === undefined)).toEqual([true, true, true]);
    expect(socket.listenerCount("close")).toBe(1);
  });

  it("calls the listeners in flight once when the connection closes, and not those that stopped", async () => {
    const socket = new PassThrough();
    const heard: string[] = [];
    const link = socketLink(socket);
    link.onGone(() => heard.push("a"));
    const stopB = link.onGone(() => heard.push("b"));
    link.onGone(() => heard.push("c"));
    stopB();
    expect(link.gone).toBe(false);
    socket.destroy();
    await new Promise((resolve) => socket.once("close", resolve));
    expect(heard).toEqual(["a", "c"]);
    expect(link.gone).toBe(true);
  });

  it("a response destroyed before its connection counts as gone", () => {
    const socket = new PassThrough();
    const response = { destroyed: false };
    const link = socketLink(socket, response);
    expect(link.gone).toBe(false);
    response.destroyed = true;
    expect(link.gone).toBe(true);
  });
});
