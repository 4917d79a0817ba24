import { type Action, runAction } from "./actions.ts";

/** Where a placement lives: enough to wind it down or clear its fence. */
export interface PlacementTarget {
  namespace: string;
  env: string | null;
  /** One placement, or (absent) every placement of the namespace. */
  id?: string;
}

/** Wind down now (deadline 0), or clear the wind-down fence (deadline null): POST /registry/wind_down. */
export function windDownAction(target: PlacementTarget, deadline: 0 | null): Action {
  const what = target.id !== undefined ? `${target.namespace}/${target.id}` : `every placement of ${target.namespace}`;
  const body: Record<string, unknown> = {
    namespace: target.namespace,
    deadline,
    ...(target.id !== undefined ? { id: target.id } : {}),
    ...(target.env ? { env: target.env } : {}),
  };
  return deadline === null
    ? {
        title: `Clear the fence of ${what}`,
        description: "The wind-down deadline is removed; the placement stays where it is.",
        path: "/registry/wind_down",
        body,
      }
    : {
        title: `Wind down ${what}`,
        description: "The owner is told to let go now; the next request places it again, at a higher epoch.",
        path: "/registry/wind_down",
        body,
      };
}

export async function windDown(target: PlacementTarget, deadline: 0 | null, answers: HTMLElement): Promise<void> {
  await runAction(windDownAction(target, deadline), answers);
}
