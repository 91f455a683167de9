import type { ErrorRequestHandler, RequestHandler } from 'express';
import { ZodError } from 'zod';
import { DomainError, DomainErrorCode } from '../../errors';
import { StoreUnavailable, WrongExpectedVersion } from '../../eventstore/port';
import type { Logger } from '../../log';

/** An error that already knows its HTTP answer. `detail` is a string or FastAPI's 422 list. */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly detail: unknown,
    readonly headers: Record<string, string> = {},
  ) {
    super(typeof detail === 'string' ? detail : `HTTP ${status}`);
  }
}

const STATUS: Record<DomainErrorCode, number> = {
  invalid: 422,
  unauthenticated: 401,
  payment_required: 402,
  forbidden: 403,
  not_found: 404,
  conflict: 409,
  unprocessable: 422,
  rate_limited: 429,
  bad_request: 400,
  unavailable: 503,
};

/** FastAPI's validation error list: [{loc, msg, type}], loc starting with "body" or "query". */
export function zodToDetail(err: ZodError, where: 'body' | 'query' | 'path' = 'body') {
  return err.issues.map((i) => ({
    loc: [where, ...i.path.map((p) => (typeof p === 'number' ? p : String(p)))],
    msg: i.message,
    type: i.code,
  }));
}

/**
 * For a path that exists under other methods: 405 naming them in `Allow` (RFC 9110), so a GET on a
 * POST route says what to send instead of pretending the path does not exist.
 */
export function methodNotAllowed(...allowed: string[]): RequestHandler {
  const allow = allowed.join(', ');
  return (req) => {
    throw new HttpError(405, `Method Not Allowed: ${req.method} ${req.path} answers only ${allow}`, { Allow: allow });
  };
}

export const notFoundHandler: RequestHandler = (req, res) => {
  res.status(404).json({ detail: 'Not Found' });
};

/** The one place errors become HTTP answers. No stack trace ever reaches a client. */
export function errorHandler(log: Logger): ErrorRequestHandler {
  return (err, req, res, _next) => {
    if (res.headersSent) {
      log.warn({ err }, 'error after the response started');
      res.end();
      return;
    }
    if (err instanceof HttpError) {
      res.set(err.headers).status(err.status).json({ detail: err.detail });
    } else if (err instanceof DomainError) {
      const status = STATUS[err.code];
      // One rule: a value that breaks a documented constraint is 422 in FastAPI's list format,
      // whether the schema or a business rule caught it.
      if (status === 422)
        res.status(422).json({ detail: [{ loc: err.field ? ['body', err.field] : ['body'], msg: err.message, type: 'value_error' }] });
      else if (status === 503 || status === 429)
        res.status(status).set('Retry-After', String(err.retryAfterSeconds)).json({ detail: err.message });
      else res.status(status).json({ ...err.fields, detail: err.message });
    } else if (err instanceof ZodError) {
      res.status(422).json({ detail: zodToDetail(err) });
    } else if (err instanceof StoreUnavailable) {
      log.error({ err }, 'event store unavailable');
      res.status(503).set('Retry-After', '1').json({ detail: 'Service temporarily unavailable: the event store cannot be written' });
    } else if (err instanceof WrongExpectedVersion) {
      res.status(409).json({ detail: 'Conflicting concurrent change; retry the request' });
    } else if (err?.type === 'entity.parse.failed') {
      res.status(422).json({ detail: [{ loc: ['body'], msg: 'Body is not valid JSON', type: 'json_invalid' }] });
    } else if (err?.type === 'encoding.invalid_utf8') {
      res.status(422).json({ detail: [{ loc: ['body'], msg: 'Body is not valid UTF-8', type: 'unicode_decode_error' }] });
    } else if (typeof err?.code === 'string' && err.code.startsWith('Z_')) {
      // zlib's own words ("incorrect header check") mean nothing to a client.
      res
        .status(400)
        .json({ detail: `Body could not be decompressed: it is not valid ${String(req.header('content-encoding') ?? 'compressed')} data` });
    } else if (err?.type === 'entity.too.large') {
      res.status(413).json({ detail: 'Request body too large' });
    } else if (typeof err?.status === 'number' && err.status >= 400 && err.status < 500) {
      res.status(err.status).json({ detail: err.expose && err.message ? err.message : 'Bad Request' });
    } else {
      log.error({ err, path: req.path }, 'unhandled error');
      res.status(500).json({ detail: 'Internal Server Error' });
    }
  };
}
