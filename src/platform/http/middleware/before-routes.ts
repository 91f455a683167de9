import { randomUUID } from 'node:crypto';
import { isUtf8 } from 'node:buffer';
import express, { type Request, type RequestHandler, Router } from 'express';
import type { Metrics } from '../../metrics/metrics';
import type { ReadModelReadiness } from '../../projections/readiness';
import { HttpError } from './errors';

/**
 * The middleware every request passes before its route, in the order createApp mounts it: the
 * request timer, the request id, the response headers every answer carries, the JSON body (with its
 * raw bytes) and, once the health and OpenAPI routes are mounted, the read-models gate.
 */

/** The matched route's template (`/v1/workspaces/:ws/keys`), never the path itself: bounded labels. */
function routeOf(req: Request): string {
  const route = (req as Request & { route?: { path?: unknown } }).route;
  if (route && typeof route.path === 'string') return `${req.baseUrl}${route.path}`;
  return 'unmatched';
}

/** Times every request (tollgate_http_request_duration_seconds) and counts rate-limit refusals. */
export function httpMetrics(metrics: Metrics): RequestHandler {
  return (req, res, next) => {
    const end = metrics.httpDuration.startTimer();
    // 'close' also fires when the caller hangs up before the answer is complete.
    res.once('close', () => {
      const route = routeOf(req);
      end({ method: req.method, route, status: String(res.statusCode) });
      if (res.statusCode === 429) metrics.rateLimited.inc({ route });
    });
    next();
  };
}

const SAFE_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** Every response carries an x-request-id: the caller's own when it is sane, else a new uuid. */
export const requestId: RequestHandler = (req, res, next) => {
  const given = req.header('x-request-id');
  const id = given && SAFE_ID.test(given) ? given : randomUUID();
  res.locals.requestId = id;
  res.setHeader('x-request-id', id);
  next();
};

/** Headers every answer carries. */
export const securityHeaders: RequestHandler = (req, res, next) => {
  res.setHeader('X-Content-Type-Options', 'nosniff');
  // Account answers (sessions, key secrets, balances) are for the caller alone: no cache keeps them.
  if (req.path.startsWith('/v1/')) res.setHeader('Cache-Control', 'no-store');
  next();
};

/** Keeps the raw bytes too: Stripe webhook signatures are computed over them. */
export const jsonBody = (): RequestHandler =>
  express.json({
    limit: '2mb',
    verify: (req, _res, buf) => {
      // Refused rather than decoded with U+FFFD in place of the bad bytes.
      if (!isUtf8(buf)) throw Object.assign(new Error('Body is not valid UTF-8'), { type: 'encoding.invalid_utf8' });
      (req as unknown as { rawBody: Buffer }).rawBody = buf;
    },
  });

/**
 * 503 with Retry-After while the read models a route answers from are being rebuilt from the
 * event store (after Redis lost its data, or on a first start): an answer from half a read model
 * would be a wrong 401, a wrong 402 or a reservation against a wrong balance. `hotPath`: the read
 * models the inference routes answer from (each area's module names its own: `hotPathProjections`).
 */
export function readModelsGate(readiness: ReadModelReadiness, hotPath: readonly string[]): Router {
  const hot = hotPath.filter((n) => readiness.names.includes(n));
  const gate =
    (names: string[]): RequestHandler =>
    async (_req, _res, next) => {
      const missing = await readiness.notReady(names);
      if (!missing.length) return next();
      next(
        new HttpError(503, `Service temporarily unavailable: read models are being rebuilt (${missing.join(', ')}); retry shortly`, {
          'Retry-After': '2',
        }),
      );
    };
  const r = Router();
  r.use('/external/api/inference', gate(hot));
  r.use('/v1', gate(readiness.names));
  return r;
}
