/**
 * A new sessionId: 128 random bits as 32 hex digits. The resolve script reads its first 8 digits
 * as the session's rendezvous seed, so affinity hashing costs no string hashing in Lua.
 */
export function newSessionId(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

/** The remaining seconds of a timed drain ("" when the drain is a cordon or absent). */
export function drainDeadlineSeconds(deadlineMs: string, nowMs: number): number | undefined {
  if (deadlineMs === "") return undefined;
  return Math.max(0, Math.ceil((Number(deadlineMs) - nowMs) / 1000));
}
