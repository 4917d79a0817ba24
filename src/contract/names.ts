/**
 * Name rules Pinboard and the worker library share. A namespace is "/" plus one path segment of
 * unreserved URL characters; an id uses the same characters. Hostnames and envs are labels.
 */
export const NAMESPACE_PATTERN = /^\/[A-Za-z0-9._~-]{1,128}$/;
export const ID_PATTERN = /^[A-Za-z0-9._~-]{1,256}$/;
/** Hostnames and envs: lowercase, without `*`, whitespace, `/` or `:`. */
export const LABEL_FORBIDDEN = /[*\s/:]/;

export const isNamespace = (ns: string): boolean => NAMESPACE_PATTERN.test(ns);
export const isId = (id: string): boolean => ID_PATTERN.test(id);
export const isLabel = (label: string): boolean => label.length > 0 && label.length <= 253 && !LABEL_FORBIDDEN.test(label);

/**
 * Namespaces that would shadow Pinboard's own routes (`/registry/*`, `/healthz`, `/readyz`,
 * `/metrics`) or the worker's (`{advertiseUrl}/_pinned/*`): register refuses them with 400
 * `reserved namespace: …`. Matched exactly, as the routes are.
 */
export const RESERVED_NAMESPACES: ReadonlySet<string> = new Set(["/registry", "/_pinned", "/healthz", "/readyz", "/metrics"]);

export const isReservedNamespace = (ns: string): boolean => RESERVED_NAMESPACES.has(ns);

/** A namespace a worker may serve: well-formed and not reserved (register accepts exactly these). */
export const isWorkerNamespace = (ns: string): boolean => isNamespace(ns) && !isReservedNamespace(ns);
