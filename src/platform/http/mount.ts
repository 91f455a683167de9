import type { NextFunction, Request, RequestHandler, Response, Router } from 'express';
import { RouteContract, validate, Validated } from './contract';

/**
 * A route mounts from its contract, as Unkey's `app.openapi(route, handler)` does:
 *
 *   mount(r, deleteKey, session, member, async (req, res, { params }) => { … });
 *
 * The method and path are the contract's; the middleware runs in the order given; then the
 * headers, path, query and body are checked against the contract (422 in FastAPI's list format
 * otherwise, ./contract.ts) and the handler gets them typed. A handler never repeats its path or
 * reads its input another way.
 */

export type Handler<C extends RouteContract> = (req: Request, res: Response, input: Validated<C>, next: NextFunction) => unknown;

/** Reads the path, query and body when the handler chooses; the same checks and 422s as `mount`'s. */
export type ReadInput<C extends RouteContract> = (req: Request) => Omit<Validated<C>, 'headers'>;

export type DeferredHandler<C extends RouteContract> = (req: Request, res: Response, read: ReadInput<C>, next: NextFunction) => unknown;

const DEFERRED = Symbol('deferred validation');

export interface Deferred<C extends RouteContract> {
  readonly [DEFERRED]: DeferredHandler<C>;
}

/**
 * A handler that validates when it chooses, not before it runs. The metered inference routes
 * admit the key (401, 429) before a bad body is answered 422, and validate inside that step
 * (docs/INFERENCE.md); the Stripe webhook checks the signature over the raw body before reading
 * it. Their headers are their middleware's (the Idempotency-Key's own 422s; ignored when
 * idempotency is off), so `read` checks path, query and body only. `read` is made once per route:
 * a request costs no more than a direct call to `validate`.
 */
export function deferValidation<C extends RouteContract>(handler: DeferredHandler<C>): Deferred<C> {
  return { [DEFERRED]: handler };
}

export function mount<C extends RouteContract>(
  router: Router,
  contract: C,
  ...chain: [...middleware: RequestHandler[], handler: Handler<C> | Deferred<C>]
): void {
  const middleware = chain.slice(0, -1) as RequestHandler[];
  const last = chain[chain.length - 1] as Handler<C> | Deferred<C>;
  let handler: RequestHandler;
  if (typeof last === 'function') {
    handler = (req, res, next) => last(req, res, validate(contract, req), next);
  } else {
    const deferred = last[DEFERRED];
    const read: ReadInput<C> = (req) => validate(contract, req, false);
    handler = (req, res, next) => deferred(req, res, read, next);
  }
  (router[contract.method] as (path: string, ...handlers: RequestHandler[]) => unknown).call(router, contract.path, ...middleware, handler);
}
