import { type Context, Hono } from "hono";
import type { AppDeps, AppEnv } from "../deps/app-deps.ts";
import type { DataPlane } from "./data-plane.ts";
import { fetchTransport } from "./fetch-transport.ts";
import { carriesBody } from "./framing.ts";
import { inboundOfRequest } from "./inbound.ts";

/**
 * The data plane as a Hono route over fetch: mounted after health and the registry, it answers
 * every other path. The Workers entry serves all of its data plane here; the Node entry answers
 * data-plane paths on node:http before Hono sees them (src/runtime/node/transport/).
 */
export function dataPlaneRoute(
  deps: AppDeps,
  dataPlane: DataPlane,
  peerAddress: (c: Context<AppEnv>) => string,
): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  app.all("*", (c) => {
    const request = c.req.raw;
    const inbound = inboundOfRequest(request, peerAddress(c), deps.runtime.edgeHeaders?.(request));
    const transport = fetchTransport({
      fetch: deps.fetch,
      body: carriesBody(inbound.framing) ? request.body : null,
      client: inbound.client,
      defer: (work) => defer(c, deps, work),
      decodesBodies: deps.runtime.fetchDecodesBodies,
      uploadPipe: deps.runtime.uploadPipe,
    });
    return dataPlane.serve(inbound, transport);
  });
  return app;
}

function defer(c: Context<AppEnv>, deps: AppDeps, work: Promise<unknown>): void {
  const guarded = work.catch((err: unknown) =>
    deps.log.warn("background work failed", { error: err instanceof Error ? err.message : String(err) }),
  );
  // Only a request-bound runtime has an execution context (Hono's getter throws elsewhere).
  if (deps.runtime.backgroundWork === "request-bound") c.executionCtx.waitUntil(guarded);
}
