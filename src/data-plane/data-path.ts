import { isId, isWorkerNamespace } from "../contract/names.ts";
import { PinboardError } from "../errors/pinboard-error.ts";

export interface DataPath {
  ns: string;
  id: string;
  /** The rest of the path after the id, "" or starting with "/". */
  rest: string;
}

/**
 * Splits `{basePath}/{ns}/{id}{rest}`. A path that is not inside basePath or names no valid
 * namespace segment (or a reserved one: /registry, /healthz, …) is null (the caller answers
 * 404); an id that is empty, over 256 characters or outside [A-Za-z0-9._~-] is 400 text/plain.
 */
export function parseDataPath(pathname: string, basePath: string): DataPath | null {
  if (basePath !== "" && pathname !== basePath && !pathname.startsWith(`${basePath}/`)) return null;
  const path = pathname.slice(basePath.length);
  const second = path.indexOf("/", 1);
  if (second < 0) return null;
  const ns = path.slice(0, second);
  // A reserved namespace can never be registered: unknown, without asking Redis.
  if (!isWorkerNamespace(ns)) return null;
  const third = path.indexOf("/", second + 1);
  const id = third < 0 ? path.slice(second + 1) : path.slice(second + 1, third);
  if (!isId(id)) throw new PinboardError(400, id === "" ? "empty id" : "invalid id");
  return { ns, id, rest: third < 0 ? "" : path.slice(third) };
}

/** Pinboard's own paths under the base path, besides /registry/*. */
const OWN_PATHS: ReadonlySet<string> = new Set(["/healthz", "/readyz", "/openapi.json", "/console", "/registry"]);

/**
 * Whether a path is the data plane's rather than one of Pinboard's own routes (/healthz,
 * /readyz, /openapi.json, /console, /registry/*, and everything outside the base path, such as
 * the Node entry's /metrics). The Node entry serves the data plane on node:http directly and the rest through the
 * Hono app; on Workers the Hono app tries its own routes first and this needs no asking.
 */
export function isDataPlanePath(pathname: string, basePath: string): boolean {
  if (pathname === "/metrics") return false;
  if (basePath !== "" && pathname !== basePath && !pathname.startsWith(`${basePath}/`)) return false;
  const path = pathname.slice(basePath.length);
  return !OWN_PATHS.has(path) && !path.startsWith("/registry/");
}
