import { Router } from 'express';
import { RebuildFenced, rebuildProjection, RebuildRunning, rebuildStatus } from '../platform/projections/rebuild';
import { projectionStatus } from '../platform/projections/status';
import { projectionsOf, type Module, type Services } from '../services';
import { eraseUser as eraseAccount, readSession, setRateLimit as setKeyRateLimit } from '../accounts';
import { requireOperator } from '../platform/http/middleware/operator';
import { mount } from '../platform/http/mount';
import { HttpError } from '../platform/http/middleware/errors';
import { adminMetrics, eraseUser, listProjections, rebuild, setRateLimit } from './schemas';

/** Operators: projection status and rebuild, a key's request rate, erasing a user. */
export function adminRouter(s: Services, modules: readonly Module[]): Router {
  const r = Router();
  r.use(
    '/admin',
    requireOperator(s.config.ADMIN_TOKEN, async (token) => (await readSession(s, token)) !== null),
  );

  mount(r, listProjections, async (_req, res) => {
    const names = projectionsOf(s, modules).map((p) => p.name);
    const rows = await projectionStatus(s.store, s.redis, s.ks, names, s.config.PROJECTION_PARTITIONS);
    const rebuilding = await Promise.all(names.map((n) => rebuildStatus(s.redis, s.ks, n)));
    res.json({ projections: rows.map((row, i) => ({ ...row, rebuilding: rebuilding[i] })) });
  });

  mount(r, rebuild, async (_req, res, { params: { name } }) => {
    const all = projectionsOf(s, modules);
    const projection = all.find((p) => p.name === name);
    if (!projection) throw new HttpError(404, `Unknown projection "${name}"; known: ${all.map((p) => p.name).join(', ')}`);
    let result;
    try {
      result = await rebuildProjection({
        store: s.store,
        redis: s.redis,
        ks: s.ks,
        projection,
        partitions: s.config.PROJECTION_PARTITIONS,
      });
    } catch (err) {
      if (err instanceof RebuildRunning) return void res.status(409).json({ detail: err.message, rebuilding: err.progress });
      // It stalled past its lock's lifetime and another rebuild took over: that one finishes the job.
      if (err instanceof RebuildFenced) return void res.status(409).json({ detail: err.message });
      throw err;
    }
    res.json({ name: result.name, generation: result.gen, events: result.events, ms: result.ms });
  });

  // The Prometheus text, for setups that scrape through the API port (METRICS_PORT is the usual way).
  mount(r, adminMetrics, async (_req, res) => {
    res.type(s.metrics.registry.contentType).send(await s.metrics.registry.metrics());
  });

  mount(r, setRateLimit, async (_req, res, { params, body }) => {
    await setKeyRateLimit(s, {
      workspaceId: params.ws,
      keyId: params.keyId,
      requestsPerMinute: body.requestsPerMinute,
      metadata: { actor: 'operator', correlationId: res.locals.requestId as string | undefined },
    });
    res.json({
      keyId: params.keyId,
      requestsPerMinute: body.requestsPerMinute ?? s.config.RATE_LIMIT_PER_MINUTE,
      overridden: body.requestsPerMinute !== null,
    });
  });

  mount(r, eraseUser, async (_req, res, { params }) => {
    await eraseAccount(s, null, { userId: params.id, by: 'operator', correlationId: res.locals.requestId as string | undefined });
    res.status(204).end();
  });
  return r;
}

export const adminModule: Module = { name: 'admin', router: adminRouter };
