/**
 * Every Lua script of Pinboard with its typed wrapper; importing this module defines them all in
 * the registry.
 */

export * from "./apply-drain.ts";
export * from "./clear-overwritten.ts";
export * from "./copy-ns-list.ts";
export * from "./deregister-session.ts";
export * from "./enqueue-message.ts";
export * from "./fleet-claim.ts";
export * from "./gc-bucket.ts";
export * from "./gc-fleet.ts";
export * from "./heartbeat-bucket.ts";
export * from "./heartbeat-session.ts";
export * from "./lookup-binding.ts";
export * from "./mark-ejected.ts";
export * from "./ns-list-snapshot.ts";
export * from "./page-in-placeholder.ts";
export * from "./read-spent.ts";
export * from "./rebind-rows.ts";
export * from "./record-failure.ts";
export * from "./record-success.ts";
export * from "./register-bucket.ts";
export * from "./register-session.ts";
export * from "./release-row.ts";
export * from "./resolve.ts";
export * from "./resurrection.ts";
export * from "./scan-orphans.ts";
export * from "./spend-sync-apply.ts";
export * from "./spend-sync-read.ts";
export * from "./sweeper-lease.ts";
export * from "./tag-row.ts";
export * from "./unmirror-bucket.ts";
export * from "./wake-progress.ts";
export * from "./wind-down-rows.ts";
export * from "./zrem-if-score.ts";
