import { readFileSync } from "node:fs";

/** /proc/net/tcp states in which the local end still holds a connection open. */
const ESTABLISHED = "01";
const CLOSE_WAIT = "08";

/**
 * How many TCP connections on this machine (this network namespace) are still held open by their
 * client end towards `port`: ESTABLISHED, or CLOSE_WAIT (the server closed, the client has not
 * yet noticed and closed its end). Read from /proc/net/tcp and /proc/net/tcp6; null where those
 * do not exist (not Linux).
 *
 * Lets a test wait until another process (a Pinboard process) has seen a server's connections
 * close, instead of sleeping and hoping it has.
 */
export function openConnectionsTo(port: number): number | null {
  let count = 0;
  let readable = false;
  for (const file of ["/proc/net/tcp", "/proc/net/tcp6"]) {
    let table: string;
    try {
      table = readFileSync(file, "utf8");
    } catch {
      continue;
    }
    readable = true;
    for (const line of table.split("\n").slice(1)) {
      // sl local_address rem_address st …, addresses as HEXIP:HEXPORT
      const [, , remote, state] = line.trim().split(/\s+/);
      if (!remote || !state) continue;
      const remotePort = Number.parseInt(remote.slice(remote.lastIndexOf(":") + 1), 16);
      if (remotePort === port && (state === ESTABLISHED || state === CLOSE_WAIT)) count++;
    }
  }
  return readable ? count : null;
}
