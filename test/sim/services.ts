import { createHmac } from 'node:crypto';
import { signingKeyOfSeed } from '../../src/platform/crypto/signing-key';
import type { Config } from '../../src/platform/config';
import { loadConfig } from '../../src/platform/config';
import { createLogger, type Logger } from '../../src/platform/log';
import { Metrics } from '../../src/platform/metrics/metrics';
import { Keyspace } from '../../src/platform/projections/keyspace';
import { ReadModels } from '../../src/platform/projections/read-models';
import { RedisProgress } from '../../src/platform/projections/progress';
import type { Services } from '../../src/services';
import type { RedisPool } from './redis-gate';
import type { SimGateway, SimModel, SimQueue } from './ports';
import type { SimEventStore } from './store';
import type { Proc, World } from './world';

/**
 * The Services a simulated process gets: the same shape the composition root builds
 * (src/init.ts buildServices), with every port simulated: the clock and ids from the world, the
 * event store in memory, Redis through the gate, the gateway, the model and the queue simulated.
 */

export interface Shared {
  world: World;
  pool: RedisPool;
  store: SimEventStore;
  gateway: SimGateway;
  model: SimModel;
  queue: SimQueue;
  config: Config;
}

let metrics: Metrics | null = null;
let log: Logger | null = null;

export function simConfig(prefix: string, over: Record<string, string>): Config {
  return loadConfig(
    {
      REDIS_URL: 'redis://127.0.0.1:6379',
      REDIS_PREFIX: prefix,
      LOG_LEVEL: 'silent',
      SWEEPER_MIN_AGE_MS: '330000',
      SWEEPER_INTERVAL_MS: '20000',
      INFERENCE_TIMEOUT_MS: '20000',
      // Redis expires a lease on its own clock: at the longest lease it never does during a run (the
      // simulator expires a dead or paused owner's leases on simulated time instead).
      PROJECTION_LEASE_MS: '600000',
      PROJECTION_BATCH_SIZE: '50',
      READ_YOUR_WRITES_TIMEOUT_MS: '5000',
      ...over,
    },
    {},
  );
}

/**
 * How often a read-your-writes waiter polls the checkpoints: the announcements arrive (the gate's
 * SimPubSub), so the poll is the safety net only; at production's 50 ms most of a schedule's steps
 * were polls of a waiter whose projector was down.
 */
const PROGRESS_POLL_MS = 1000;

export function simServices(sh: Shared, proc: Proc): Services {
  const { world, config } = sh;
  metrics ??= new Metrics();
  log ??= createLogger('silent');
  const redis = sh.pool.take(proc).redis;
  const ks = new Keyspace(config.REDIS_PREFIX);
  const s: Services = {
    config,
    log,
    store: sh.store,
    redis,
    ks,
    readModels: new ReadModels(redis, ks),
    progress: { waitFor: async () => false, waitForReadModels: async () => false },
    metrics,
    storeWrites: { lastAppendFailure: null },
    gateway: sh.gateway,
    model: () => sh.model,
    search: undefined,
    reloadQueue: async () => sh.queue.asQueue(),
    loginGuard: undefined as never,
    liveUsage: undefined as never,
    now: () => new Date(world.nowMs()),
    newId: () => world.rng.uuid(),
    connectRedis: async () => sh.pool.take(proc).redis,
    // A simulated process is dropped, never shut down: nothing registered to run at close.
    onClose: () => undefined,
    // The simulated store holds no personal data (no sign-ups, no webhooks): no data keys, and
    // lookups hashed under a fixed key so a seed replays the same stream names.
    keys: undefined as never,
    signingKeys: { current: signingKeyOfSeed(Buffer.alloc(32, 7)), retired: [], source: 'RECEIPT_SIGNING_KEY' },
    lookupHash: (value) => createHmac('sha256', 'tollgate-sim').update(value).digest('hex'),
    close: async () => undefined,
  };
  return s;
}

/** An api's or a worker's view of the projections' progress: the production RedisProgress, polling. */
export function progressOf(sh: Shared, proc: Proc, s: Services, names: string[]): RedisProgress {
  return new RedisProgress(sh.pool.pubsub.subscriber(proc), s.redis, s.ks, names, s.config.PROJECTION_PARTITIONS, PROGRESS_POLL_MS);
}
