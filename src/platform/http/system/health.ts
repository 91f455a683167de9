import { randomUUID } from 'node:crypto';
import { open, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { Router } from 'express';
import type { PlatformServices as Services } from '../../services';
import { mount } from '../mount';
import { healthz, readyz } from './schemas';
import { partitionKeyspaces } from '../../projections/partitions';

/** A check that does not answer within this long counts as failed: /readyz must answer promptly. */
const CHECK_TIMEOUT_MS = 1500;
/** A failed append keeps the store "not writable" this long, unless one succeeds sooner. */
const WRITE_FAILURE_HOLD_MS = 30_000;
/** The SQLite data directory is test-written at most this often. */
const DISK_PROBE_EVERY_MS = 5_000;

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
 * Writes, syncs and removes a small file beside the SQLite store: a full disk or a read-only
 * file system shows here even while no request appends anything. Only an error counts: a slow
 * disk (a busy machine's fsync) is not an unwritable one, so /readyz never waits for a probe; it
 * reports the last finished one and starts the next at most every DISK_PROBE_EVERY_MS.
 */
function diskProbe(dir: string): () => string | null {
  let problem: string | null = null;
  let startedAt = 0;
  let running = false;
  const run = async () => {
    const file = join(dir, `.write-probe-${randomUUID()}`);
    try {
      const fh = await open(file, 'w');
      try {
        await fh.write(Buffer.alloc(4096));
        await fh.sync();
      } finally {
        await fh.close();
      }
      problem = null;
    } catch (err) {
      problem = `DATA_DIR ${dir} cannot be written: ${(err as Error).message}`;
    } finally {
      await unlink(file).catch(() => undefined);
    }
  };
  return () => {
    if (!running && Date.now() - startedAt >= DISK_PROBE_EVERY_MS) {
      running = true;
      startedAt = Date.now();
      void run().finally(() => (running = false));
    }
    return problem;
  };
}

/**
 * /healthz: the process is up. /readyz: 200 only when
 * - the event store answers and can be written (its last append did not fail for want of a
 *   writable store, and for SQLite the data directory takes a write);
 * - Redis answers;
 * - the read models are ready: the projector caught them up since Redis last lost its data.
 * 503 names every check that failed.
 */
export function healthRouter(s: Services, _startHead?: bigint): Router {
  const r = Router();
  const probe = s.config.EVENT_STORE === 'sqlite' ? diskProbe(s.config.DATA_DIR) : () => null;
  mount(r, healthz, (_req, res) => {
    res.json({ status: 'ok' });
  });
  mount(r, readyz, async (_req, res) => {
    const checks: Record<string, string> = {};
    const [store, redis] = await Promise.allSettled([
      within(s.store.ping(), CHECK_TIMEOUT_MS, 'event store'),
      within(s.redis.ping(), CHECK_TIMEOUT_MS, 'Redis'),
    ]);
    const disk = probe();
    const failed = s.storeWrites.lastAppendFailure;
    if (store.status === 'rejected') checks.eventStore = `unreachable: ${(store.reason as Error)?.message}`;
    else if (disk) checks.eventStore = `not writable: ${disk}`;
    else if (failed && Date.now() - failed.at.getTime() < WRITE_FAILURE_HOLD_MS) {
      checks.eventStore = `not writable: the last append failed at ${failed.at.toISOString()}: ${failed.message}`;
    } else checks.eventStore = 'ok';
    checks.redis = redis.status === 'fulfilled' ? 'ok' : `unreachable: ${(redis.reason as Error)?.message}`;
    checks.projections = checks.redis === 'ok' ? await projectionsCheck(s) : 'unknown: Redis unreachable';
    const ok = Object.values(checks).every((v) => v === 'ok');
    res.status(ok ? 200 : 503).json({ status: ok ? 'ready' : 'not ready', checks });
  });
  return r;
}

async function projectionsCheck(s: Services): Promise<string> {
  const readiness = s.readiness;
  if (!readiness || !readiness.names.length) return 'ok';
  try {
    const missing = await within(
      readiness.refresh().then(() => readiness.notReady(readiness.names)),
      CHECK_TIMEOUT_MS,
      'Redis',
    );
    if (!missing.length) return 'ok';
    const head = await s.store.headPosition();
    const local = (s.progress as { position?: unknown }).position;
    const at = typeof local === 'bigint' ? local : await lowestCheckpoint(s, missing);
    return `catching up: at position ${at} of ${head} (rebuilding ${missing.join(', ')} from the event store)`;
  } catch (err) {
    return `unknown: ${(err as Error).message}`;
  }
}

async function lowestCheckpoint(s: Services, names: string[]): Promise<bigint> {
  let min: bigint | null = null;
  for (const n of names) {
    const gen = await s.readModels.gen(n);
    // Every partition's checkpoint (PROJECTION_PARTITIONS): the lowest is where the read model stands.
    for (const ks of partitionKeyspaces(s.ks.prefix, s.config.PROJECTION_PARTITIONS)) {
      const cp = BigInt((await s.redis.get(ks.checkpoint(n, gen))) ?? '0');
      if (min === null || cp < min) min = cp;
    }
  }
  return min ?? 0n;
}
