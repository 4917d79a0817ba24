/**
 * Name rules Pinboard and the worker library share. A namespace is "/" plus one path segment of
 * unreserved URL characters; an id uses the same characters. Hostnames and envs are labels.
 */
export const NAMESPACE_PATTERN = /^\/[A-Za-z0-9._~-]{1,128}$/;
export const ID_PATTERN = /^[A-Za-z0-9._~-]{1,256}$/;
/** Hostnames and envs: lowercase, without `*`, whitespace, `/` or `:`. */
export const LABEL_FORBIDDEN = /[*\s/:]/;

/**
 * A namespace is "/" plus one path segment, and never a dot segment ("/." or "/.."): a URL parser
 * resolves those ("/../x" is "/x"), so a worker URL built on one would leave the advertise URL.
 */
export const isNamespace = (ns: string): boolean => NAMESPACE_PATTERN.test(ns) && ns !== "/." && ns !== "/..";
export const isId = (id: string): boolean => ID_PATTERN.test(id);
export const isLabel = (label: string): boolean =>
  label.length > 0 && label.length <= 253 && !LABEL_FORBIDDEN.test(label);

/**
 * Namespaces that would shadow Pinboard's own routes (`/registry/*`, `/healthz`, `/readyz`,
 * `/metrics`, `/console`, `/openapi.json`) or the worker's (`{advertiseUrl}/_pinned/*`): register
 * refuses them with 400 `reserved namespace: …`. Matched exactly, as the routes are. A worker
 * page under `/console` or `/openapi.json` would share the operator console's origin and path;
 * src/app/app.ts refuses to build an app with a route whose first segment is missing here.
 */
export const RESERVED_NAMESPACES: ReadonlySet<string> = new Set([
  "/registry",
  "/_pinned",
  "/healthz",
  "/readyz",
  "/metrics",
  "/console",
  "/openapi.json",
]);

export const isReservedNamespace = (ns: string): boolean => RESERVED_NAMESPACES.has(ns);

/** A namespace a worker may serve: well-formed and not reserved (register accepts exactly these). */
export const isWorkerNamespace = (ns: string): boolean => isNamespace(ns) && !isReservedNamespace(ns);
