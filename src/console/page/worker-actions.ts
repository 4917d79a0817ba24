import { type Action, runAction } from "./actions.ts";
import type { Worker } from "./fleet-order.ts";

export type WorkerActionKind = "drain" | "timed" | "undrain";

/** The drain, timed drain and undrain of one worker, each confirmed first (actions.ts). */
export function workerAction(worker: Worker, kind: WorkerActionKind): Action {
  if (kind === "undrain")
    return {
      title: `Undrain ${worker.clientId}`,
      description: "New placements may go to this worker again.",
      path: "/registry/undrain",
      body: { clientId: worker.clientId },
    };
  if (kind === "drain")
    return {
      title: `Drain ${worker.clientId}`,
      description: "No new placements go to this worker; the instances it holds stay until released.",
      path: "/registry/drain",
      body: { clientId: worker.clientId, deadline: null },
    };
  return {
    title: `Timed drain of ${worker.clientId}`,
    description: "No new placements, and the worker releases what it holds by the deadline.",
    path: "/registry/drain",
    body: { clientId: worker.clientId },
    askSeconds: "Deadline in seconds",
  };
}

export async function actOnWorker(worker: Worker, kind: WorkerActionKind, answers: HTMLElement): Promise<void> {
  await runAction(workerAction(worker, kind), answers);
}
