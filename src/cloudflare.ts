import type { ExecutionContext, ScheduledController } from "@cloudflare/workers-types";
import { appFor, configFailure, type Env, type Isolate, isolateFor } from "./runtime/cloudflare/isolate.ts";
import { runSweep } from "./sweeper/sweep.ts";

/** The Cloudflare Workers entry: `fetch` serves the app, `scheduled` runs one sweep pass. */
export default {
  async fetch(request: Request, env: Env, ctx: ExecutionContext): Promise<Response> {
    let current: Isolate;
    try {
      current = isolateFor(env);
    } catch (err) {
      return configFailure(err);
    }
    return appFor(current, request).fetch(request, env, ctx);
  },

  async scheduled(_controller: ScheduledController, env: Env, ctx: ExecutionContext): Promise<void> {
    const { deps } = isolateFor(env);
    ctx.waitUntil(runSweep(deps).then(() => undefined));
  },
};
