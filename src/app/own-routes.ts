import { isReservedNamespace } from "../contract/names.ts";

/**
 * The namespaces Pinboard's own routes occupy, read from the routes actually mounted, so the
 * reserved list (src/contract/names.ts) cannot drift from them: a route added under a new first
 * segment without reserving it would let a worker register that namespace and serve pages on
 * Pinboard's own paths (and its origin). The list itself stays in src/contract/ because register,
 * the data plane and the worker library all judge names by it without an app at hand.
 */

/** The first segment ("/registry") of a route path; undefined for "/", "/*" and "/:param…". */
export function firstSegment(path: string): string | undefined {
  const segment = path.split("/")[1] ?? "";
  if (segment === "" || segment.startsWith("*") || segment.startsWith(":")) return undefined;
  return `/${segment}`;
}

/** The distinct first segments of the given route paths (each relative to where it is served). */
export function routeNamespaces(paths: Iterable<string>): string[] {
  const found = new Set<string>();
  for (const path of paths) {
    const segment = firstSegment(path);
    if (segment !== undefined) found.add(segment);
  }
  return [...found].sort();
}

/**
 * Throws when a route's first segment is not a reserved namespace. Called by createPinboard on
 * every app it builds, so every start and every test that builds an app catches a new route.
 */
export function requireReserved(paths: Iterable<string>): void {
  const unreserved = routeNamespaces(paths).filter((ns) => !isReservedNamespace(ns));
  if (unreserved.length > 0) {
    throw new Error(
      `Pinboard's own routes under ${unreserved.join(", ")} are not reserved namespaces: ` +
        "add them to RESERVED_NAMESPACES in src/contract/names.ts",
    );
  }
}
