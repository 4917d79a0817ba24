/**
 * The durability store's Lua scripts (lua/durable-*.lua, generated into lua/scripts.generated.ts
 * by `npm run lua`), by the names redis-durability.ts runs them under. Every writing script starts
 * with the epoch fence (lua/includes/fence.lua) over the instance's meta hash.
 */
export {
  durableActivateScript as durableActivate,
  durableClearAlarmScript as durableClearAlarm,
  durableCommitScript as durableCommit,
  durableDeleteAllScript as durableDeleteAll,
  durableDeleteScript as durableDelete,
  durableListScript as durableList,
  durablePutScript as durablePut,
  durableSetAlarmScript as durableSetAlarm,
  durableUnindexAlarmScript as durableUnindexAlarm,
} from "./lua/scripts.generated.ts";
