import { Router } from 'express';
import type { Services } from '../../services';

/**
 * /healthz: the process is up. /readyz: the event store and Redis answer, and the projections have
 * caught up with the head the process saw when it started (so its reads are not stale history).
 */
export function healthRouter(s: Services, startHead: bigint): Router {
  const r = Router();
  r.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });
  r.get('/readyz', async (_req, res) => {
    const checks: Record<string, string> = {};
    await s.store.ping().then(
      () => (checks.eventStore = 'ok'),
      (e: Error) => (checks.eventStore = e.message),
    );
    await s.redis.ping().then(
      () => (checks.redis = 'ok'),
      (e: Error) => (checks.redis = e.message),
    );
    const caughtUp = checks.redis === 'ok' && (await s.progress.waitFor(startHead, 0).catch(() => false));
    checks.projections = caughtUp ? 'ok' : `catching up to position ${startHead}`;
    const ok = Object.values(checks).every((v) => v === 'ok');
    res.status(ok ? 200 : 503).json({ status: ok ? 'ready' : 'not ready', checks });
  });
  return r;
}
