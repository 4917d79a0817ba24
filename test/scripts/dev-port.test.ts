import { spawn } from "node:child_process";
import { createServer, type Server } from "node:http";
import { fileURLToPath } from "node:url";
import { afterAll, expect, it } from "vitest";

/**
 * `npm run dev` (scripts/dev.ts) on a port another server holds: it must say so and exit before it starts anything,
 * not print "listening" and fresh credentials because the other server answered its readiness
 * probe. The occupant here answers every request 200, as another Pinboard's /healthz would.
 */

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
let occupant: Server | undefined;

afterAll(async () => {
  await new Promise((resolve) => (occupant ? occupant.close(resolve) : resolve(undefined)));
});

it("exits 1 naming the port and what to set, before starting Redis or wrangler", async () => {
  occupant = createServer((_req, res) => res.end("ok"));
  await new Promise<void>((resolve) => occupant!.listen(0, "127.0.0.1", resolve));
  const port = (occupant.address() as { port: number }).port;

  // What `npm run dev` runs (tsx scripts/dev.ts), without npm's start-up time.
  const child = spawn(process.execPath, ["--import", "tsx", "scripts/dev.ts"], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", NO_COLOR: "1", PORT: String(port) },
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
  });
  let output = "";
  child.stdout.on("data", (d: Buffer) => (output += d.toString()));
  child.stderr.on("data", (d: Buffer) => (output += d.toString()));
  const kill = setTimeout(() => {
    try {
      process.kill(-child.pid!, "SIGKILL");
    } catch {
      // gone
    }
  }, 9500);
  const code = await new Promise<number | null>((resolve) => child.once("close", resolve));
  clearTimeout(kill);

  expect(code, output).toBe(1);
  expect(output).toContain(`pinboard dev: port ${port} is in use; set PORT=… (or PORT=0 for a free one)`);
  expect(output).not.toContain("listening");
  expect(output).not.toContain("PINBOARD_WORKER_TOKEN");
  expect(output).not.toContain("redis-server");
}, 10_000);
