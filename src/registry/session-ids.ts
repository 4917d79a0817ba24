/** A new sessionId: 128 random bits, base64url. */
export function newSessionId(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  let binary = "";
  for (const b of bytes) binary += String.fromCharCode(b);
  return btoa(binary).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

/** The remaining seconds of a timed drain ("" when the drain is a cordon or absent). */
export function drainDeadlineSeconds(deadlineMs: string, nowMs: number): number | undefined {
  if (deadlineMs === "") return undefined;
  return Math.max(0, Math.ceil((Number(deadlineMs) - nowMs) / 1000));
}
