import { startTcpProxy } from "./tcp-proxy.ts";

export interface HangProxy {
  url: string;
  /** While true, every connection is accepted and every byte a client sends is swallowed: no answer ever comes. */
  hanging: boolean;
  close(): Promise<void>;
}

/**
 * A TCP proxy on loopback in front of an HTTP server (the REST bridge) that can be switched to
 * hang: connections, new or kept alive, stay open and are never answered, as an endpoint whose
 * network went silent would be.
 */
export async function startHangProxy(targetPort: number): Promise<HangProxy> {
  const state = { hanging: false };
  const proxy = await startTcpProxy(targetPort, (client, upstream) => {
    client.on("data", (chunk: Buffer) => {
      if (!state.hanging) upstream.write(chunk);
    });
    upstream.on("data", (chunk: Buffer) => {
      if (!state.hanging) client.write(chunk);
    });
  });
  // The handle is the state itself: setting its `hanging` is what the piping reads.
  return Object.assign(state, { url: `http://127.0.0.1:${proxy.port}`, close: proxy.close });
}
