import { expect, it } from "vitest";
import { instructions } from "../../../scripts/demo/instructions.ts";
import type { DemoStack, DemoWorker } from "../../../scripts/demo/stack.ts";
import { parseCommandLine } from "../../../src/cli/args.ts";

/**
 * What `npm run demo` prints for a human: the exports it asks for are the variables the commands
 * below them use, and the one holding Pinboard's URL is PINBOARD_URL, which the operator CLI reads.
 */

const worker = (name: string, pid: number): DemoWorker =>
  ({ name, url: `http://127.0.0.1:${pid}`, pid, alive: () => true }) as unknown as DemoWorker;

it("exports PINBOARD_URL (what npx pinboard reads) and uses only exported variables", () => {
  const [a, b] = [worker("worker-a", 40001), worker("worker-b", 40002)];
  const stack = {
    pinboardUrl: "http://127.0.0.1:45678",
    leaseMs: 3000,
    operatorToken: "eyJop",
    redis: { url: "redis://:pw@127.0.0.1:45679", port: 45679 },
    workers: [a, b],
  } as unknown as DemoStack;
  const text = instructions(stack, a, b);

  expect(text).toContain("  export PINBOARD_URL=http://127.0.0.1:45678\n");
  expect(text).not.toMatch(/export PINBOARD=/);
  // Pinboard's Redis password stays out of the terminal: the store is named by its address.
  expect(text).not.toContain(":pw@");
  expect(text).toContain(
    "  redis      redis://127.0.0.1:45679   (Pinboard's registry; the workers' durable state as user pinned)",
  );
  const exported = new Set([...text.matchAll(/export (\w+)=/g)].map((m) => m[1]));
  const used = new Set([...text.matchAll(/\$(\w+)/g)].map((m) => m[1]));
  for (const name of used) expect(exported, `$${name} is used but not exported`).toContain(name);

  // The CLI, given the exports, talks to the demo's Pinboard.
  const env = Object.fromEntries([...text.matchAll(/export (\w+)=(\S+)/g)].map((m) => [m[1]!, m[2]!]));
  const invocation = parseCommandLine(["workers"], env);
  expect(invocation.help).toBe(false);
  expect(invocation).toMatchObject({ globals: { url: "http://127.0.0.1:45678", token: "eyJop" } });
});
