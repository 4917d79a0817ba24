import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";

// V8's gc() without starting the test process with --expose-gc: the flag is set at run time, and
// a fresh context made afterwards gets the function.
setFlagsFromString("--expose-gc");
const v8gc = runInNewContext("gc") as (options?: { type: "minor" | "major" }) => void;

/** A full collection, or with "minor" one of the young generation alone. */
export function collectGarbage(type: "minor" | "major" = "major"): void {
  v8gc({ type });
}
