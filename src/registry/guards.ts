/**
 * Temporary: src/operator/routes.ts (being rewritten on another branch) still imports the access
 * checks from here. When the branches meet, import them from ./access.ts there and delete this file.
 */
export { requireScope, requireServing } from "./access.ts";
