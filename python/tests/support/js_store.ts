/**
 * The JS side of the cross-language tests: runs one list of operations on pinned-js's
 * RedisDurabilityStore (or FencedRedis) and prints each result as a JSON line.
 *   npx tsx python/tests/support/js_store.ts '{"url": "redis://…", "prefix": "p:", "ops": [...]}'
 * An op is [method, ...args] with the InstanceRef first; a failure prints {"error": name, "message"}.
 */
import { FencedRedis, type FencedCommand, RedisDurabilityStore } from "../../../src/pinned/index.ts";

type Op = [string, ...unknown[]];
interface Plan {
  url: string;
  prefix?: string;
  ops: Op[];
}

const plan = JSON.parse(process.argv[2]!) as Plan;
const store = new RedisDurabilityStore({ redis: plan.url, prefix: plan.prefix });
const fenced = new FencedRedis({ redis: plan.url });

async function run([method, ...args]: Op): Promise<unknown> {
  if (method === "fencedWrite") return fenced.write(args[0] as string, args[1] as string, args[2] as FencedCommand);
  const fn = (store as unknown as Record<string, (...a: unknown[]) => Promise<unknown>>)[method];
  if (typeof fn !== "function") throw new Error(`no method ${method}`);
  return fn.apply(store, args);
}

for (const op of plan.ops) {
  try {
    const result = await run(op);
    console.log(JSON.stringify({ result: result === undefined ? null : result }));
  } catch (err) {
    const e = err as Error;
    console.log(JSON.stringify({ error: e.name, message: e.message }));
  }
}
await store.close();
await fenced.close();
