import { Router } from 'express';
import type { Services } from '../../services';

/** A check that does not answer within this long counts as failed: /readyz must answer promptly. */
const CHECK_TIMEOUT_MS = 1500;

function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`${what} did not answer within ${ms} ms`)), ms);
    p.then(
      (v) => (clearTimeout(t), resolve(v)),
      (e) => (clearTimeout(t), reject(e)),
    );
  });
}

/**
 * /healthz: the process is up. /readyz: the event store and Redis answer, and the projections have
 * caught up with the head the process saw when it started (so its reads are not stale history).
 * 503 names every check that failed; once caught up, the projections stay "ok" (a later lag is
 * normal operation, not unreadiness).
 */
export function healthRouter(s: Services, startHead: bigint): Router {
  const r = Router();
  let caughtUpOnce = false;
  r.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });
  r.get('/readyz', async (_req, res) => {
    const checks: Record<string, string> = {};
    const [store, redis] = await Promise.allSettled([
      within(s.store.ping(), CHECK_TIMEOUT_MS, 'event store'),
      within(s.redis.ping(), CHECK_TIMEOUT_MS, 'Redis'),
    ]);
    checks.eventStore = store.status === 'fulfilled' ? 'ok' : `unreachable: ${(store.reason as Error)?.message}`;
    checks.redis = redis.status === 'fulfilled' ? 'ok' : `unreachable: ${(redis.reason as Error)?.message}`;
    if (!caughtUpOnce && checks.redis === 'ok') {
      caughtUpOnce = await within(s.progress.waitFor(startHead, 0), CHECK_TIMEOUT_MS, 'projections').catch(() => false);
    }
    if (caughtUpOnce) checks.projections = 'ok';
    else if (checks.redis !== 'ok') checks.projections = 'unknown: Redis unreachable';
    else {
      const at = (s.progress as { position?: unknown }).position;
      checks.projections =
        typeof at === 'bigint'
          ? `catching up: at position ${at} of ${startHead} (the head at start)`
          : `catching up to position ${startHead} (the head at start)`;
    }
    const ok = Object.values(checks).every((v) => v === 'ok');
    res.status(ok ? 200 : 503).json({ status: ok ? 'ready' : 'not ready', checks });
  });
  return r;
}
