import type { Request } from 'express';
import { z, ZodError } from 'zod';
import { HttpError, zodToDetail } from './middleware/errors';

/**
 * One contract per route: the zod schemas that validate a request, type its handler and describe
 * its answers are the same objects the OpenAPI document is generated from. Each area lists its
 * contracts in its `schemas.ts` as `routes`; `src/openapi/` collects them.
 */

export type Method = 'get' | 'post' | 'put' | 'patch' | 'delete';

/** How a caller proves who it is; each becomes an OpenAPI security scheme. */
export type Security = 'apiKey' | 'session' | 'operatorToken' | 'stripeSignature';

export interface ResponseContract {
  description: string;
  /** The body's schema; absent for an empty answer (204) or one described only in prose. */
  schema?: z.ZodType;
  /** Defaults to application/json. Streams use text/event-stream, exports text/csv. */
  contentType?: string;
  /**
   * For text/event-stream: the JSON each `data:` line holds (the body itself is a string). Other
   * frames a stream may carry (an `event: error`) are said in the description.
   */
  eventSchema?: z.ZodType;
  /** Other media types the same status answers with, chosen by the request (chat completions: `stream`). */
  also?: Array<Omit<ResponseContract, 'description' | 'also'>>;
  /** Response headers worth knowing (name → what it holds). */
  headers?: Record<string, string>;
}

export interface RouteContract<
  P extends z.ZodType = z.ZodType,
  Q extends z.ZodType = z.ZodType,
  B extends z.ZodType = z.ZodType,
  H extends z.ZodObject = z.ZodObject,
> {
  method: Method;
  /** Express style, with `:name` parameters: `/v1/workspaces/:ws/keys`. */
  path: string;
  summary: string;
  description?: string;
  tags: string[];
  /** Any one of these is enough; empty means the route is public. */
  security: Security[];
  params?: P;
  query?: Q;
  /**
   * Request headers the route reads (documented as `in: header` parameters, so a generated client
   * knows them): an object of header name → schema; optional ones are `.optional()`. `mount`
   * checks them before the body; a deferred route's middleware checks its own (./mount.ts).
   */
  headers?: H;
  body?: B;
  /**
   * A request with no body at all is refused as a whole (422, loc ["body"]) instead of read as `{}`.
   * The inference routes answer so; elsewhere a missing body is an empty one.
   */
  bodyRequired?: boolean;
  responses: Record<number, ResponseContract>;
}

/** Identity, so a contract keeps its exact schema types for `validate`. */
export function route<P extends z.ZodType, Q extends z.ZodType, B extends z.ZodType, H extends z.ZodObject = z.ZodObject>(
  c: RouteContract<P, Q, B, H>,
): RouteContract<P, Q, B, H> {
  return c;
}

type Out<S> = S extends z.ZodType ? z.output<S> : undefined;

// NonNullable: an optional field's type is `P | undefined`, and the undefined must not distribute
// into the handler's type when the contract does declare the part.
export interface Validated<C extends RouteContract> {
  params: Out<NonNullable<C['params']>>;
  query: Out<NonNullable<C['query']>>;
  body: Out<NonNullable<C['body']>>;
  headers: Out<NonNullable<C['headers']>>;
}

function check(schema: z.ZodType | undefined, value: unknown, where: 'path' | 'query' | 'body'): unknown {
  if (!schema) return undefined;
  const r = schema.safeParse(value);
  if (!r.success) throw new HttpError(422, zodToDetail(r.error as ZodError, where));
  return r.data;
}

/** Whether the request carries a body at all (the test body-parser and type-is use). */
function hasBody(req: Request): boolean {
  const length = req.header('content-length');
  return req.header('transfer-encoding') !== undefined || (length !== undefined && length !== '0');
}

/**
 * A body the JSON parser left alone because of its Content-Type (curl -d sends
 * application/x-www-form-urlencoded) or a required body that is missing: said in those words,
 * instead of the schema's "expected object, received undefined".
 */
function checkJsonBody(contract: RouteContract, req: Request): void {
  const problem = (msg: string, type: string) => new HttpError(422, [{ loc: ['body'], msg, type }]);
  if (hasBody(req) && !req.is('application/json')) {
    const got = req.header('content-type');
    throw problem(
      `The body must be JSON sent with the header Content-Type: application/json (${got ? `got ${got.split(';')[0]}` : 'no Content-Type was sent'})`,
      'content_type',
    );
  }
  if (contract.bodyRequired && req.body === undefined) {
    throw problem('A JSON body is required, sent with the header Content-Type: application/json', 'missing');
  }
}

/**
 * The declared headers, each under the name the contract spells: one problem per header that
 * fails (`type` "missing" when it was not sent), before anything else is read.
 */
function checkHeaders(schema: z.ZodObject | undefined, req: Request): unknown {
  if (!schema) return undefined;
  const sent: Record<string, string | undefined> = {};
  for (const name of Object.keys(schema.shape)) sent[name] = req.header(name);
  const r = schema.safeParse(sent);
  if (r.success) return r.data;
  const seen = new Set<PropertyKey>();
  const detail = r.error.issues
    .filter((i) => !seen.has(i.path[0]) && seen.add(i.path[0]))
    .map((i) => ({
      loc: ['header', ...i.path.map(String)],
      msg: i.message,
      type: sent[String(i.path[0])] === undefined ? 'missing' : i.code,
    }));
  throw new HttpError(422, detail);
}

/**
 * What a route reads from the request, checked against its contract: the headers (unless
 * `headers` is false: a deferred route's middleware owns them), then path, query and body.
 * `mount` calls it; a handler never does. A failure is 422 in FastAPI's list format, `loc`
 * starting with "header", "path", "query" or "body", and nothing has been done yet.
 */
export function validate<C extends RouteContract>(contract: C, req: Request, headers = true): Validated<C> {
  const h = headers ? checkHeaders(contract.headers, req) : undefined;
  if (contract.body) checkJsonBody(contract, req);
  return {
    params: check(contract.params, req.params, 'path'),
    query: check(contract.query, req.query, 'query'),
    body: check(contract.body, req.body ?? (contract.bodyRequired ? undefined : {}), 'body'),
    headers: h,
  } as Validated<C>;
}
