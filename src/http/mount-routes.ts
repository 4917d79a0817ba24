import { type Context, type Env, Hono, type MiddlewareHandler } from "hono";
import type { z } from "zod";
import { type BodySchema, readJsonBody } from "./json-body.ts";
import type { RouteDeclaration, RouteTable } from "./route-declaration.ts";

/** The parsed body a declaration takes (undefined for a route without one). */
export type BodyOf<D> = D extends { body: BodySchema<infer B> } ? B : undefined;
/** What a handler gives back: the reply the declaration names, or a Response of its own. */
type HandlerResult<D> = (D extends { reply: infer R extends z.ZodType } ? z.input<R> : never) | Response;

export type RouteHandler<D, E extends Env = Env> = (
  c: Context<E>,
  body: BodyOf<D>,
) => HandlerResult<D> | Promise<HandlerResult<D>>;
/** One handler for each declaration of a table, by the same name. */
export type RouteHandlers<T extends RouteTable, E extends Env = Env> = { [K in keyof T]: RouteHandler<T[K], E> };

/** The middleware a declaration's credential and serving flag call for, in the order they run. */
export type GuardsOf<E extends Env = Env> = (declaration: RouteDeclaration<unknown>) => MiddlewareHandler<E>[];

/** For tables of open routes: refuses a declaration that needs a credential or the serving check. */
function unguarded<E extends Env>(declaration: RouteDeclaration<unknown>): MiddlewareHandler<E>[] {
  if (declaration.credential !== "none" || declaration.servingOnly)
    throw new Error(`${declaration.path} needs guards: mount it with the registry's routeGuards`);
  return [];
}

/**
 * Registers each declaration of `table` with its handler: the guards (401/403, 503), then the
 * body (413/400 `expected {…}`), then the handler, whose reply is answered as JSON.
 */
export function mountRoutes<T extends RouteTable, E extends Env = Env>(
  table: T,
  handlers: RouteHandlers<T, E>,
  guardsOf: GuardsOf<E> = unguarded,
): Hono<E> {
  const app = new Hono<E>();
  for (const name of Object.keys(table) as (keyof T & string)[]) {
    const declaration = table[name] as RouteDeclaration<unknown>;
    const handler = handlers[name] as RouteHandler<RouteDeclaration<unknown>, E>;
    const answer: MiddlewareHandler<E> = async (c) => {
      const body = declaration.body ? await readJsonBody(c, declaration.body) : undefined;
      const result = await handler(c, body as never);
      return result instanceof Response ? result : c.json(result as object);
    };
    const chain = [...guardsOf(declaration), answer] as [MiddlewareHandler<E>];
    app.on(declaration.method.toUpperCase(), declaration.path, ...chain);
  }
  return app;
}
