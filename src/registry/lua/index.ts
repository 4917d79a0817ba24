/** The scripts of the registry (lua/*.lua) with their typed wrappers: named inputs in, parsed results out. */
export * from "./deregister-session.ts";
export * from "./enqueue-message.ts";
export * from "./heartbeat-bucket.ts";
export * from "./heartbeat-session.ts";
export * from "./read-spent.ts";
export * from "./rebind-rows.ts";
export * from "./register-bucket.ts";
export * from "./register-session.ts";
export * from "./release-row.ts";
export * from "./scripts.generated.ts";
export * from "./session-keys.ts";
export * from "./tag-row.ts";
export * from "./unmirror-bucket.ts";
