/**
 * What the alarms of a chaos run record (alarm-workload.ts), and what check-alarms.ts judges.
 * Each alarm has an id of its own; an instance keeps its pending alarms in storage and sets the
 * library's one alarm to the earliest, so several alarms of one key can be pending at once.
 */

/** A client's request to set an alarm, as the client saw it. */
export interface AlarmSet {
  /** Unique per run. */
  alarm: string;
  key: string;
  node: number;
  /** When it is due (harness clock): the request's start + the delay it asked for. */
  due: number;
  start: number;
  end: number;
  /** As Operation["outcome"]: ok is acknowledged (stored, durable), info may or may not be. */
  outcome: "ok" | "fail" | "info";
  epoch?: string;
  worker?: string;
  error?: string;
}

/**
 * The instance's alarm handler's log lines (written synchronously): "fired" when it took the
 * alarm as due (before any write), "committed" once the alarm's removal from storage was durable.
 */
export interface AlarmFired {
  worker: string;
  key: string;
  epoch: string;
  alarm: string;
  phase: "fired" | "committed";
  /** The library's retry count of this alarm() call. */
  retryCount: number;
  at: number;
}

export interface AlarmHistory {
  sets: AlarmSet[];
  fired: AlarmFired[];
}
