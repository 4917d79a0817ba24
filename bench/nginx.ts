/**
 * nginx as a second baseline, when it is installed (`apt-get install nginx-light`): a config
 * generated in a temp directory (pid, logs and temp paths there too), one worker process, an
 * upstream block holding 64 keep-alive connections to the same worker server the other fronts
 * forward to, run in the foreground as a child of the bench and killed at the end.
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort } from "../src/runtime/node/process/free-port.ts";
import { killWhenBenchDies } from "./children.ts";

export const NGINX_WORKER_PROCESSES = 1;

export interface RunningNginx {
  url: string;
  pid: number;
  version: string;
  workerProcesses: number;
  stop(): Promise<void>;
}

/** The nginx binary's version line, or null when no `nginx` is on PATH. */
export function nginxVersion(): string | null {
  const r = spawnSync("nginx", ["-v"], { encoding: "utf8" });
  if (r.error || r.status !== 0) return null;
  return (r.stderr || r.stdout).trim().replace(/^nginx version:\s*/, "");
}

function config(dir: string, port: number, upstream: URL): string {
  const base = upstream.pathname.replace(/\/+$/, "");
  return `worker_processes ${NGINX_WORKER_PROCESSES};
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path ${dir}/client_body;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;
  upstream fleet {
    server ${upstream.host};
    keepalive 64;
  }
  server {
    listen 127.0.0.1:${port};
    keepalive_requests 1000000;
    # The client's ceiling: nginx answering by itself, with the worker's 11 bytes.
    location /ceiling/ {
      default_type text/plain;
      return 200 "hello world";
    }
    location / {
      proxy_pass http://fleet${base}/;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_buffering off;
    }
  }
}
`;
}

/** Starts nginx in front of `upstream` (origin + path prefix) and waits until it answers. */
export async function startNginx(upstream: string, version: string): Promise<RunningNginx> {
  const dir = mkdtempSync(join(tmpdir(), "pinboard-bench-nginx-"));
  const port = await freePort();
  const conf = join(dir, "nginx.conf");
  writeFileSync(conf, config(dir, port, new URL(upstream)));
  // Its own process group, so the watchdog can take the workers along with the master.
  const child: ChildProcess = spawn("nginx", ["-p", dir, "-c", conf, "-g", "daemon off;"], {
    stdio: ["ignore", "ignore", "pipe"],
    detached: true,
  });
  if (child.pid === undefined) throw new Error("nginx: spawn failed");
  killWhenBenchDies(child.pid, { group: true });
  let stderr = "";
  child.stderr?.on("data", (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-4000)));
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const url = `http://127.0.0.1:${port}`;
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill("SIGQUIT");
      const kill = setTimeout(() => child.kill("SIGKILL"), 3000);
      await exited;
      clearTimeout(kill);
    }
    rmSync(dir, { recursive: true, force: true });
  };
  for (const deadline = Date.now() + 10_000; ; ) {
    if (child.exitCode !== null) throw new Error(`nginx exited (${child.exitCode}): ${stderr}`);
    const up = await fetch(`${url}/`).then(
      (r) => {
        void r.arrayBuffer();
        return true;
      },
      () => false,
    );
    if (up) break;
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`nginx did not answer within 10 s: ${stderr}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return { url, pid: child.pid, version, workerProcesses: NGINX_WORKER_PROCESSES, stop };
}
