import type { Server } from "node:http";

/**
 * A bench child's server lives as long as the bench holds its stdin: on SIGTERM or when stdin
 * ends, every connection is cut and the process exits (so even a SIGKILLed bench leaves none).
 */
export function exitWithParent(server: Server): void {
  const stop = () => {
    server.closeAllConnections();
    server.close();
    process.exit(0);
  };
  process.once("SIGTERM", stop);
  process.stdin.once("end", stop);
  process.stdin.once("close", stop);
  process.stdin.resume();
}
