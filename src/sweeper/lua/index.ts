/** The scripts of the sweeper (lua/*.lua) with their typed wrappers. */
export * from "./gc-bucket.ts";
export * from "./gc-fleet.ts";
export * from "./page-in-placeholder.ts";
export * from "./resurrection.ts";
export * from "./scan-orphans.ts";
export * from "./scripts.generated.ts";
export * from "./sweeper-lease.ts";
export * from "./wake-page.ts";
export * from "./wake-progress.ts";
export * from "./zrem-if-score.ts";
