/**
 * Preloaded (--import) into a Pinboard process a test watches: counts every error object
 * constructed from then on, thrown or not, and where. The built-in error constructors on
 * globalThis are replaced by proxies that count each construction (with `new` or without), so a
 * class extending one of them (PinboardError, a library's error) counts too, having been defined
 * after this ran; `Error.captureStackTrace` counts as well, since libraries use it to make
 * error-like objects of their own. Node's internals build their errors from constructors captured
 * before any user code runs, and are not seen here: a thrown one is seen by the debugger instead.
 *
 * The test reads `globalThis[CENSUS]` over the inspector (Runtime.evaluate) and empties `sites`.
 */
export const CENSUS = "__pinboardErrorCensus";

/** Where each error was made: its constructor's name and the first frames of its stack. */
export interface ErrorCensus {
  sites: string[];
}

const census: ErrorCensus = { sites: [] };
(globalThis as Record<string, unknown>)[CENSUS] = census;

const captureStackTrace = Error.captureStackTrace.bind(Error);

/** The caller's first frames, taken without constructing an error (which would count itself). */
/** What Error.captureStackTrace takes as the frame to stop above. */
type Frame = (...args: never[]) => unknown;

function site(kind: string, above: Frame): string {
  const holder: { stack?: string } = {};
  captureStackTrace(holder, above);
  const frames = (holder.stack ?? "")
    .split("\n")
    .slice(1, 5)
    .map((line) => line.trim().replace(/^at /, ""));
  return `${kind} < ${frames.join(" < ")}`;
}

const ERROR_CLASSES = [
  "Error",
  "TypeError",
  "RangeError",
  "SyntaxError",
  "ReferenceError",
  "EvalError",
  "URIError",
  "AggregateError",
] as const;

for (const name of ERROR_CLASSES) {
  const original = globalThis[name] as unknown as new (...args: unknown[]) => object;
  const counted: ProxyHandler<typeof original> = {
    construct(target, args, newTarget) {
      census.sites.push(
        site(
          newTarget === proxy ? name : `${(newTarget as { name: string }).name} (extends ${name})`,
          counted.construct!,
        ),
      );
      return Reflect.construct(target, args, newTarget) as object;
    },
    apply(target, thisArg, args) {
      census.sites.push(site(`${name}()`, counted.apply!));
      return Reflect.apply(target as unknown as (...args: unknown[]) => object, thisArg, args);
    },
    get(target, property, receiver) {
      if (name === "Error" && property === "captureStackTrace") return countedCapture;
      return Reflect.get(target, property, receiver) as unknown;
    },
  };
  const proxy = new Proxy(original, counted);
  (globalThis as Record<string, unknown>)[name] = proxy;
}

function countedCapture(target: object, constructorOpt?: Frame): void {
  census.sites.push(site("Error.captureStackTrace", countedCapture));
  captureStackTrace(target, constructorOpt);
}
