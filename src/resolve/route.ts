import { PinboardError } from "../errors.ts";
import { isId, isNamespace } from "../registry/names.ts";

export interface DataPath {
  ns: string;
  id: string;
  /** The rest of the path after the id, "" or starting with "/". */
  rest: string;
}

/**
 * Splits `{basePath}/{ns}/{id}{rest}`. A path that is not inside basePath or names no valid
 * namespace segment is null (the caller answers 404); an id that is empty, over 256 characters
 * or outside [A-Za-z0-9._~-] is 400 text/plain.
 */
export function parseDataPath(pathname: string, basePath: string): DataPath | null {
  if (basePath !== "" && pathname !== basePath && !pathname.startsWith(`${basePath}/`)) return null;
  const path = pathname.slice(basePath.length);
  const second = path.indexOf("/", 1);
  if (second < 0) return null;
  const ns = path.slice(0, second);
  if (!isNamespace(ns)) return null;
  const third = path.indexOf("/", second + 1);
  const id = third < 0 ? path.slice(second + 1) : path.slice(second + 1, third);
  if (!isId(id)) throw new PinboardError(400, id === "" ? "empty id" : "invalid id");
  return { ns, id, rest: third < 0 ? "" : path.slice(third) };
}
