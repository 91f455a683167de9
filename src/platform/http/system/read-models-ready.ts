import { RequestHandler, Router } from 'express';
import type { ReadModelReadiness } from '../../projections/readiness';
import { HttpError } from '../middleware/errors';

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
