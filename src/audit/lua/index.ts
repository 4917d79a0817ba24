/** The audit trail's scripts (lua/*.lua) with their typed wrappers. */
export * from "./append-audit.ts";
export * from "./record-ejection.ts";
export * from "./scripts.generated.ts";
