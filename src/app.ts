import { isUtf8 } from 'node:buffer';
import express from 'express';
import type { Module, Services } from './services';
import { errorHandler, notFoundHandler } from './platform/http/middleware/errors';
import { requestId } from './platform/http/middleware/request-id';
import { httpMetrics } from './platform/metrics/http';
import { openApiRouter } from './openapi/router';
import { healthRouter } from './platform/http/system/health';
import { readModelsGate } from './platform/http/system/read-models-ready';
import { HOT_PATH_READ_MODELS } from './core-read-models';

/** The Express app: health, the OpenAPI document and its page, then each module's routes, then 404 and the one error mapper. */
export function createApp(s: Services, modules: Module[], startHead: bigint): express.Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('trust proxy', 'loopback');
  app.use(httpMetrics(s.metrics));
  app.use(requestId);
  app.use((req, res, next) => {
    res.setHeader('X-Content-Type-Options', 'nosniff');
    // Account answers (sessions, key secrets, balances) are for the caller alone: no cache keeps them.
    if (req.path.startsWith('/v1/')) res.setHeader('Cache-Control', 'no-store');
    next();
  });
  // Keeps the raw bytes too: Stripe webhook signatures are computed over them.
  app.use(
    express.json({
      limit: '2mb',
      verify: (req, _res, buf) => {
        // Refused rather than decoded with U+FFFD in place of the bad bytes.
        if (!isUtf8(buf)) throw Object.assign(new Error('Body is not valid UTF-8'), { type: 'encoding.invalid_utf8' });
        (req as unknown as { rawBody: Buffer }).rawBody = buf;
      },
    }),
  );
  app.use(healthRouter(s, startHead));
  app.use(openApiRouter());
  if (s.readiness) app.use(readModelsGate(s.readiness, HOT_PATH_READ_MODELS));
  // The inference routes are the hot path: mounted first, a request to them is not matched against
  // every account and billing route before it. No other module serves their paths.
  const hotFirst = [...modules].sort((a, b) => Number(b.name === 'inference') - Number(a.name === 'inference'));
  for (const m of hotFirst) {
    const router = m.router?.(s, modules);
    if (router) app.use(router);
  }
  app.use(notFoundHandler);
  app.use(errorHandler(s.log));
  return app;
}
