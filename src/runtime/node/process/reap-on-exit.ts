import type { ChildProcess } from "node:child_process";

const children = new Set<ChildProcess>();
let listening = false;

/**
 * Kills a child with SIGKILL if this process exits while the child still runs, however this
 * process ends (a finished test file, process.exit, an uncaught error). One 'exit' listener serves
 * every child, so spawning many does not pile up listeners; a child that exits on its own is
 * forgotten.
 */
export function reapOnExit(child: ChildProcess): void {
  if (!listening) {
    listening = true;
    process.once("exit", () => {
      for (const c of children) c.kill("SIGKILL");
    });
  }
  children.add(child);
  child.once("exit", () => children.delete(child));
}
