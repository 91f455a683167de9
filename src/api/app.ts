import express from 'express';
import type { Module, Services } from '../services';
import { errorHandler, notFoundHandler } from './middleware/errors';
import { requestId } from './middleware/request-id';
import { healthRouter } from './system/health';

/** The Express app: health, then each module's routes, then 404 and the one error mapper. */
export function createApp(s: Services, modules: Module[], startHead: bigint): express.Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('trust proxy', 'loopback');
  app.use(requestId);
  // Keeps the raw bytes too: Stripe webhook signatures are computed over them.
  app.use(
    express.json({
      limit: '2mb',
      verify: (req, _res, buf) => {
        (req as unknown as { rawBody: Buffer }).rawBody = buf;
      },
    }),
  );
  app.use(healthRouter(s, startHead));
  for (const m of modules) {
    const router = m.router?.(s);
    if (router) app.use(router);
  }
  app.use(notFoundHandler);
  app.use(errorHandler(s.log));
  return app;
}
