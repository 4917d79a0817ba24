/**
 * pinboard/pinned: the TypeScript worker library for Pinboard. A worker declares namespaces and
 * an instance class per namespace; the library registers with Pinboard, keeps one instance per
 * (namespace, id) in memory, guards every forward by attestation and placement epoch, and
 * keeps durable state fenced by epoch.
 */

export { DEFAULT_DURABLE_PREFIX, DurableKeys, instanceMember, parseInstanceMember } from "../contract/durable-index.ts";
export { createWorker, type PinnedWorker, type WorkerOptions } from "./create-worker.ts";
export {
  compareEpochs,
  type DurabilityStore,
  DurabilityUnavailableError,
  type InstanceRef,
  type ListOptions,
  StaleEpochError,
  type StorageWrite,
} from "./durability.ts";
export { type FencedCommand, FencedRedis, type FencedRedisOptions, fenceKeyOf } from "./fenced-redis.ts";
export { MemoryDurabilityStore } from "./memory-durability.ts";
export { createPinnedServer, type Listening, type ListenOptions, listenPinned } from "./node-server.ts";
export { handleShutdownSignals, type ShutdownOptions } from "./node-signals.ts";
export type { Credential } from "./pinboard-client.ts";
export { RedisDurabilityStore, type RedisDurabilityStoreOptions } from "./redis-durability.ts";
export { ATTESTATION_HEADER, EPOCH_HEADER, PROXY_SECRET_HEADER, REFUSAL_HEADER } from "./responses.ts";
export {
  MAX_KEY_BYTES,
  MAX_KEYS_PER_CALL,
  MAX_KEYS_PER_TRANSACTION,
  MAX_VALUE_BYTES,
} from "./storage-limits.ts";
export type {
  AcceptedWebSocket,
  AcceptWebSocketOptions,
  AlarmInfo,
  Instance,
  InstanceClass,
  InstanceContext,
  InstanceStorage,
  PinnedLogger,
  RequestContext,
  Transaction,
} from "./types.ts";
export { PinnedWebSocket } from "./websocket.ts";
export type { AttestationOptions } from "./worker-options.ts";
