import { Job, Queue, Worker } from 'bullmq';
import type { Redis } from 'ioredis';
import { monthOf } from '../../state';
import { BALANCES } from '../../projections/balances/projection';
import { getBillingSettings, workspacesWithReloadInFlight } from '../../projections/billing-settings/queries';
import { RedisProgress } from '../../../platform/projections/progress';
import type { Services } from '../../../services';
import { chargeAutoReload, ReloadDeps, ReloadHooks, ReloadResult } from '../../usecases/auto-reload-charge';
import { enqueueReload, RELOAD_QUEUE, ReloadJobData, reloadQueue } from './queue';
import { bullPrefix } from '../../../platform/bullmq';

// The BullMQ worker that runs the auto-reload charge (src/billing/usecases/auto-reload-charge.ts) for each job, and the sweep that re-enqueues reloads in flight.

export interface ReloadWorkerOptions {
  concurrency?: number;
  lockDurationMs?: number;
  stalledIntervalMs?: number;
  maxStalledCount?: number;
  /** How often workspaces with a reload in flight are re-enqueued (a job lost with its worker). 0 = never. */
  sweepIntervalMs?: number;
  hooks?: ReloadHooks;
}

export interface RunningReloadWorker {
  worker: Worker<ReloadJobData, ReloadResult>;
  queue: Queue<ReloadJobData>;
  /** Re-enqueues every workspace with a reload in flight. */
  sweep(): Promise<number>;
  close(timeoutMs?: number): Promise<void>;
}

export async function startReloadWorker(
  deps: ReloadDeps & { workerRedis: Redis; queueRedis: Redis; prefix: string },
  opts: ReloadWorkerOptions = {},
): Promise<RunningReloadWorker> {
  const queue = reloadQueue({ redis: deps.queueRedis, prefix: deps.prefix });
  const worker = new Worker<ReloadJobData, ReloadResult>(
    RELOAD_QUEUE,
    async (job: Job<ReloadJobData>) => chargeAutoReload(deps, job.data.workspaceId, { hooks: opts.hooks, cause: job.data.cause }),
    {
      connection: deps.workerRedis,
      prefix: deps.prefix,
      concurrency: opts.concurrency ?? 4,
      lockDuration: opts.lockDurationMs ?? 30_000,
      stalledInterval: opts.stalledIntervalMs ?? 30_000,
      maxStalledCount: opts.maxStalledCount ?? 5,
    },
  );
  worker.on('failed', (job, err) =>
    deps.log.warn({ jobId: job?.id, attemptsMade: job?.attemptsMade, err: err.message }, 'auto-reload job failed'),
  );
  worker.on('error', (err) => deps.log.error({ err }, 'auto-reload worker error'));
  const sweep = async () => {
    const ids = await workspacesWithReloadInFlight(deps.readModels);
    for (const ws of ids) {
      const s = await getBillingSettings(deps.readModels, ws, monthOf(deps.now().toISOString()));
      await enqueueReload(queue, ws, s.revision, 'sweep');
    }
    return ids.length;
  };
  await sweep().catch((err) => deps.log.error({ err }, 'auto-reload sweep failed'));
  const timer = opts.sweepIntervalMs === 0 ? null : setInterval(() => void sweep().catch(() => undefined), opts.sweepIntervalMs ?? 60_000);
  timer?.unref();
  return {
    worker,
    queue,
    sweep,
    async close(timeoutMs = 5000) {
      if (timer) clearInterval(timer);
      // worker.close() waits for running jobs and has no timeout of its own.
      const graceful = worker.close();
      const timedOut = await Promise.race([graceful.then(() => false), sleep(timeoutMs).then(() => true)]);
      if (timedOut) await worker.close(true).catch(() => undefined);
      await queue.close().catch(() => undefined);
    },
  };
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms).unref());

/**
 * The worker role's auto-reload worker over a service's parts. Outside the `all` role it waits only
 * for the balances projection (all it reads) rather than for every projection.
 */
export async function startReloadWorkerFor(s: Services, opts: ReloadWorkerOptions = {}): Promise<RunningReloadWorker> {
  const progress =
    s.config.ROLE === 'all'
      ? s.progress
      : new RedisProgress(await s.connectRedis('reload-progress'), s.redis, s.ks, [BALANCES], s.config.PROJECTION_PARTITIONS);
  return startReloadWorker(
    {
      store: s.store,
      readModels: s.readModels,
      progress,
      // The process's one gateway: the worker never builds its own.
      gateway: s.gateway,
      now: s.now,
      log: s.log.child({ part: 'auto-reload' }),
      workerRedis: await s.connectRedis('bullmq-worker', { maxRetriesPerRequest: null }),
      queueRedis: await s.connectRedis('bullmq-worker-queue', { maxRetriesPerRequest: null }),
      prefix: bullPrefix(s.config, RELOAD_QUEUE),
    },
    opts,
  );
}
