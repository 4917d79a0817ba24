/**
 * The console's calls: the operator routes under Pinboard's base path, with the credential the
 * operator pasted (kept in sessionStorage for this tab only). Every answer comes back as it is,
 * with the status, so the page can show the API's own words.
 */
import { parseJson } from "../../contract/json-text.ts";

export interface Answer<T = unknown> {
  status: number;
  body: T | null;
  /** The `error` string of a JSON error answer, when there is one. */
  error?: string;
}

const STORAGE_KEY = "pinboard.console.credential";

export const credentialStore = {
  get: (): string | null => sessionStorage.getItem(STORAGE_KEY),
  set: (token: string): void => sessionStorage.setItem(STORAGE_KEY, token),
  clear: (): void => sessionStorage.removeItem(STORAGE_KEY),
};

/** Pinboard's base path: the console lives at `{basePath}/console`. */
export const basePath = location.pathname.replace(/\/console\/?$/, "");

export async function call<T>(method: "GET" | "POST", path: string, body?: unknown): Promise<Answer<T>> {
  const headers: Record<string, string> = {
    Accept: "application/json",
    Authorization: `Bearer ${credentialStore.get() ?? ""}`,
    // The audit trail records the actions the console sends as via console (src/audit/via.ts).
    "Pinboard-Via": "console",
  };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  let response: Response;
  try {
    response = await fetch(`${basePath}${path}`, {
      method,
      headers,
      body: body === undefined ? null : JSON.stringify(body),
      cache: "no-store",
    });
  } catch {
    return { status: 0, body: null, error: "Pinboard could not be reached" };
  }
  const parsed = parseJson(await response.text()) ?? null;
  const error =
    parsed && typeof parsed === "object" && typeof (parsed as { error?: unknown }).error === "string"
      ? (parsed as { error: string }).error
      : undefined;
  return { status: response.status, body: parsed as T | null, ...(error !== undefined ? { error } : {}) };
}

/** What a refused call means, in plain words. */
export function explain(answer: Answer): string {
  if (answer.status === 0) return "Pinboard could not be reached. Is it running?";
  if (answer.status === 401)
    return (
      "Pinboard does not accept this credential (401 unauthorized): it is malformed, expired, or signed with " +
      "another key. Sign in with a fresh operator credential."
    );
  if (answer.status === 403) {
    return answer.error === "forbidden"
      ? "This credential may not do that (403 forbidden): it needs the pinboard:operator scope, and claims " +
          "that cover the namespace, hostname and env."
      : `Refused (403): ${answer.error ?? "forbidden"}.`;
  }
  if (answer.status === 503 && answer.error === "not the serving fleet")
    return (
      "This Pinboard node is not serving (503 not the serving fleet): another fleet holds the license, or " +
      "it is draining."
    );
  return `${answer.status}${answer.error ? ` ${answer.error}` : ""}`;
}
