/** The scripts of the operator routes (lua/*.lua) with their typed wrappers. */
export * from "./apply-drain.ts";
export * from "./read-audit.ts";
export * from "./scripts.generated.ts";
export * from "./spread-slice.ts";
export * from "./wind-down-rows.ts";
