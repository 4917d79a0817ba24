/**
 * Preloaded (--import) into the processes a test spawns: exits once the test process that
 * spawned it is gone. A vitest fork ended by a signal runs no exit handler, and a Pinboard left
 * behind keeps reconnecting to its Redis ports, which a later file's cluster may reuse.
 */
const spawner = process.ppid;
setInterval(() => {
  if (process.ppid !== spawner) process.exit(1);
}, 500).unref();

export {};
