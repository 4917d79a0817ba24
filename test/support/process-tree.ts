import { existsSync, readdirSync, readFileSync, readlinkSync } from "node:fs";
import { connect, type Socket } from "node:net";
import { tcpTable } from "./tcp-connections.ts";

/**
 * What the OS says about a Pinboard started with PINBOARD_PROCESSES: which processes its primary
 * forked, and which of them holds which accepted connection (Linux /proc), so a test sees the
 * processes serve the port without any endpoint that names a pid.
 */

/**
 * The live children of `pid` whose command line contains `command`, from /proc (tsx may have an
 * esbuild child of its own next to the processes a test looks for).
 */
export function childPids(pid: number, command: string): number[] {
  const children: number[] = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${name}/stat`, "utf8");
    } catch {
      continue; // exited meanwhile
    }
    // pid (comm) state ppid …: comm may hold spaces and parentheses, so read after the last ")".
    const [state, ppid] = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    if (Number(ppid) !== pid || state === "Z") continue;
    try {
      if (readFileSync(`/proc/${name}/cmdline`, "utf8").split("\0").join(" ").includes(command))
        children.push(Number(name));
    } catch {
      // exited meanwhile
    }
  }
  return children.sort((a, b) => a - b);
}

export function processExists(pid: number): boolean {
  return existsSync(`/proc/${pid}`);
}

/** How many established connections accepted on local `port` process `pid` holds open. */
export function acceptedConnections(pid: number, port: number): number {
  const inodes = new Set<string>();
  for (const row of tcpTable() ?? []) if (row.state === "01" && row.localPort === port) inodes.add(row.inode);
  let held = 0;
  let fds: string[];
  try {
    fds = readdirSync(`/proc/${pid}/fd`);
  } catch {
    return 0;
  }
  for (const fd of fds) {
    try {
      const inode = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`))?.[1];
      if (inode !== undefined && inodes.has(inode)) held++;
    } catch {
      // closed meanwhile
    }
  }
  return held;
}

/**
 * `count` keep-alive connections to 127.0.0.1:`port`, each of which has had one request to
 * `path` answered (so the process that took it holds it), kept open until `close`.
 */
export async function openAnsweredConnections(
  port: number,
  path: string,
  count: number,
): Promise<{ sockets: Socket[]; statuses: number[]; close(): void }> {
  const sockets: Socket[] = [];
  const close = () => {
    for (const s of sockets) s.destroy();
  };
  try {
    const statuses = await Promise.all(
      Array.from({ length: count }, (_, i) => {
        const socket = connect(port, "127.0.0.1");
        sockets.push(socket);
        return new Promise<number>((resolve, reject) => {
          let head = "";
          socket.setEncoding("latin1");
          socket.once("error", reject);
          socket.on("data", (chunk: string) => {
            head += chunk;
            const status = /^HTTP\/1\.1 (\d{3}) /.exec(head)?.[1];
            // The whole answer is in when its body is: Content-Length bytes, or the last chunk.
            const split = head.indexOf("\r\n\r\n");
            if (!status || split < 0) return;
            const length = /\r\ncontent-length: (\d+)\r\n/i.exec(head.slice(0, split + 2))?.[1];
            if (length !== undefined ? head.length - split - 4 >= Number(length) : head.endsWith("\r\n0\r\n\r\n"))
              resolve(Number(status));
          });
          socket.write(`GET ${path.replace("{i}", String(i))} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n\r\n`);
        });
      }),
    );
    return { sockets, statuses, close };
  } catch (err) {
    close();
    throw err;
  }
}
