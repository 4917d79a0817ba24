/**
 * pinboard/pinned: the TypeScript worker library for Pinboard. A worker declares namespaces and
 * an instance class per namespace; the library registers with Pinboard, keeps one instance per
 * (namespace, id) in memory, guards every forward by attestation and placement epoch, and
 * keeps durable state fenced by epoch.
 */
export { createWorker, type PinnedWorker, type WorkerOptions } from "./create-worker.ts";
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
} from "./types.ts";
export {
  StaleEpochError,
  DurabilityUnavailableError,
  compareEpochs,
  type DurabilityStore,
  type InstanceRef,
  type ListOptions,
} from "./durability.ts";
export { MemoryDurabilityStore } from "./memory-durability.ts";
export { RedisDurabilityStore, type RedisDurabilityStoreOptions } from "./redis-durability.ts";
export { DurableKeys, DEFAULT_DURABLE_PREFIX, instanceMember, parseInstanceMember } from "../contract/durable-index.ts";
export { PinnedWebSocket } from "./websocket.ts";
export { listenPinned, createPinnedServer, type Listening, type ListenOptions } from "./node-server.ts";
export { handleShutdownSignals, type ShutdownOptions } from "./node-signals.ts";
export { REFUSAL_HEADER, EPOCH_HEADER, ATTESTATION_HEADER, PROXY_SECRET_HEADER } from "./responses.ts";
export type { Credential } from "./pinboard-client.ts";
