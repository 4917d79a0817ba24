/** The scripts of placement (lua/*.lua) with their typed wrappers: named inputs in, parsed results out. */
export * from "./clear-overwritten.ts";
export * from "./copy-ns-list.ts";
export * from "./lookup-binding.ts";
export * from "./mark-ejected.ts";
export * from "./ns-list-snapshot.ts";
export * from "./record-failure.ts";
export * from "./record-success.ts";
export * from "./resolve.ts";
export * from "./scripts.generated.ts";
export * from "./spend-sync-apply.ts";
export * from "./spend-sync-read.ts";
