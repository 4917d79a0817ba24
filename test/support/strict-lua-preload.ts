/**
 * Preloaded into a spawned Pinboard process (NODE_OPTIONS="--import tsx --import
 * ./test/support/strict-lua-preload.ts"): every script it runs is the strict variant (see
 * strict-lua.ts), so a Redis Cluster refuses any key a script reaches without declaring it.
 */
import { installStrictLua } from "./strict-lua.ts";

installStrictLua();
