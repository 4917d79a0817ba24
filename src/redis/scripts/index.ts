/** Every Lua script of Pinboard; importing this module defines them all in the registry. */
export { deregisterSession } from "./deregister-session.ts";
export { enqueueMessage } from "./enqueue-message.ts";
export { fleetClaim } from "./fleet-claim.ts";
export { heartbeatBucket } from "./heartbeat-bucket.ts";
export { heartbeatSession } from "./heartbeat-session.ts";
export { registerBucket } from "./register-bucket.ts";
export { registerSession } from "./register-session.ts";
export { releaseRow } from "./release-row.ts";
export { tagRow } from "./tag-row.ts";
export { unmirrorBucket } from "./unmirror-bucket.ts";
export { gcBucket } from "./gc-bucket.ts";
export { gcFleet } from "./gc-fleet.ts";
export { sweeperLease } from "./sweeper-lease.ts";
