/**
 * The one builder of the URLs Pinboard calls on a worker outside the data plane:
 * `{advertiseUrl}/_pinned/challenge?challenge=…`, `{advertiseUrl}/_pinned/stats` and
 * `{advertiseUrl}/{ns}/{id}/_wake|_alarm`. Each segment is percent-encoded and appended to the
 * advertise URL's path, and the result is parsed back: it must keep the advertise URL's origin
 * and its exact path, so no namespace, id or challenge can climb out of the advertise URL
 * (`..`), name another host (`//evil`), or add a query or fragment of its own. The segments `.`
 * and `..` are refused outright: a URL parser resolves them (and `%2e%2e`) whatever the
 * encoding, so they cannot be sent as path segments at all.
 */

/** A worker URL that cannot be built from these parts: the call is not made. */
export class WorkerUrlError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "WorkerUrlError";
  }
}

/** `advertiseUrl` plus the encoded `segments`, and `query` (in order) when given. Throws WorkerUrlError. */
export function workerUrl(
  advertiseUrl: string,
  segments: readonly string[],
  query: ReadonlyArray<[string, string]> = [],
): string {
  let base: URL;
  try {
    base = new URL(advertiseUrl);
  } catch {
    throw new WorkerUrlError("advertise URL is not a URL");
  }
  if (
    (base.protocol !== "http:" && base.protocol !== "https:") ||
    base.username !== "" ||
    base.password !== "" ||
    base.search !== "" ||
    base.hash !== ""
  ) {
    throw new WorkerUrlError("advertise URL is not a plain http(s) URL");
  }
  const basePath = base.pathname.replace(/\/+$/, "");
  const path = `${basePath}${segments.map((segment) => `/${encodeSegment(segment)}`).join("")}`;
  const search =
    query.length === 0
      ? ""
      : `?${query.map(([name, value]) => `${encodeQuery(name)}=${encodeQuery(value)}`).join("&")}`;
  const built = new URL(`${base.origin}${path}${search}`);
  // The check that makes the rest safe: the parsed result still names the advertise URL's origin
  // and exactly the path built (nothing resolved away, nothing moved into the host or query).
  if (
    built.origin !== base.origin ||
    built.pathname !== path ||
    !built.pathname.startsWith(`${basePath}/`) ||
    built.search !== search
  ) {
    throw new WorkerUrlError("worker URL leaves the advertise URL");
  }
  return built.href;
}

/** POST `{advertiseUrl}{ns}/{id}/{action}`: the sweeper's `_wake` and `_alarm`. */
export function instanceUrl(advertiseUrl: string, ns: string, id: string, action: "_wake" | "_alarm"): string {
  if (!ns.startsWith("/")) throw new WorkerUrlError("namespace does not start with /");
  return workerUrl(advertiseUrl, [ns.slice(1), id, action]);
}

function encodeSegment(segment: string): string {
  if (segment === "" || segment === "." || segment === "..")
    throw new WorkerUrlError(`not a path segment: ${JSON.stringify(segment)}`);
  return encode(segment);
}

/** As encode, and `'` too, which the URL parser would otherwise encode in a query itself. */
function encodeQuery(value: string): string {
  return encode(value).replace(/'/g, "%27");
}

/** encodeURIComponent, which throws on a lone surrogate: a WorkerUrlError like any other. */
function encode(value: string): string {
  try {
    return encodeURIComponent(value);
  } catch {
    throw new WorkerUrlError("not well-formed Unicode");
  }
}
