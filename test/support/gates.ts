/**
 * Gates: signals a test controls, for requests that must stay in flight until the test says so
 * (instead of a sleep that is hoped to be long enough). An instance waits at a gate; the test
 * waits until the expected number of requests arrived there, does what it needs while they are
 * held, then opens the gate. Gates live in one process: the instance and the test share it
 * (workers built with the worker library in the test process), or the test opens the gate with
 * a request to the instance (test/support/held-instances.ts).
 */
export class Gate {
  /** Requests that arrived at the gate and have not been let through yet. */
  waiting = 0;
  /** Requests that ever arrived at the gate. */
  arrivals = 0;
  private opened = false;
  private readonly release: Promise<void>;
  private letThrough!: () => void;
  private readonly watchers: Array<{ count: number; resolve: () => void }> = [];

  constructor(readonly name: string) {
    this.release = new Promise<void>((resolve) => (this.letThrough = resolve));
  }

  get isOpen(): boolean {
    return this.opened;
  }

  /** Arrives at the gate and resolves once it is open (at once when it already is). */
  async pass(): Promise<void> {
    this.arrivals++;
    this.waiting++;
    for (const watcher of this.watchers.filter((w) => this.arrivals >= w.count)) {
      this.watchers.splice(this.watchers.indexOf(watcher), 1);
      watcher.resolve();
    }
    try {
      await this.release;
    } finally {
      this.waiting--;
    }
  }

  /** Resolves once `count` requests have arrived at the gate (in total). */
  arrived(count = 1): Promise<void> {
    if (this.arrivals >= count) return Promise.resolve();
    return new Promise((resolve) => this.watchers.push({ count, resolve }));
  }

  open(): void {
    this.opened = true;
    this.letThrough();
  }
}

const gates = new Map<string, Gate>();

/** The gate of that name in this process, created closed on first use. */
export function gate(name: string): Gate {
  let found = gates.get(name);
  if (!found) gates.set(name, (found = new Gate(name)));
  return found;
}

let counter = 0;

/** A gate of its own for one test (a fresh name each call). */
export function freshGate(label = "gate"): Gate {
  return gate(`${label}-${++counter}-${process.pid}`);
}
