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
  const rows = tcpTable();
  if (rows === null) return null;
  let count = 0;
  for (const row of rows) {
    if (row.remotePort === port && (row.state === ESTABLISHED || row.state === CLOSE_WAIT)) count++;
  }
  return count;
}

export interface TcpRow {
  localPort: number;
  remotePort: number;
  /** Hex state code ("01" established, "08" close-wait, …). */
  state: string;
  inode: string;
}

/** Every row of /proc/net/tcp and /proc/net/tcp6; null where neither exists (not Linux). */
export function tcpTable(): TcpRow[] | null {
  const rows: TcpRow[] = [];
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
      // sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode (HEXIP:HEXPORT)
      const fields = line.trim().split(/\s+/);
      const [, local, remote, state] = fields;
      if (!local || !remote || !state || fields[9] === undefined) continue;
      const port = (address: string) => Number.parseInt(address.slice(address.lastIndexOf(":") + 1), 16);
      rows.push({ localPort: port(local), remotePort: port(remote), state, inode: fields[9] });
    }
  }
  return readable ? rows : null;
}
