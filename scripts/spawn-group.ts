import { type ChildProcess, spawn } from "node:child_process";

/** A process spawned in a group of its own, and what it wrote to stdout and stderr so far. */
export interface GroupProcess {
  child: ChildProcess;
  output(): string;
}

/**
 * Spawns `command` as the leader of a process group of its own, so that one signal to the group
 * reaches everything it starts (npm, npx and launchers run the real process as a grandchild), as
 * a Ctrl-C in a terminal does.
 */
export function spawnGroup(
  command: string,
  args: string[],
  options: { cwd: string; env: NodeJS.ProcessEnv },
): GroupProcess {
  const child = spawn(command, args, { ...options, stdio: ["ignore", "pipe", "pipe"], detached: true });
  let output = "";
  child.stdout?.on("data", (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on("data", (chunk: Buffer) => (output += chunk.toString()));
  return { child, output: () => output };
}
