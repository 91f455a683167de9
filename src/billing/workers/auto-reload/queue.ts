import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';

// The BullMQ queue of auto-reload jobs: one job id per workspace and billing revision.

export const RELOAD_QUEUE = 'auto-reload';

export const reloadJobId = (workspaceId: string, revision: bigint | null) =>
  `reload-${workspaceId}-${revision === null ? 'none' : revision.toString()}`;

export interface QueueOptions {
  redis: Redis;
  /** `${REDIS_PREFIX}bull`, so tests and services sharing a Redis stay apart. */
  prefix: string;
}

export interface ReloadJobData {
  workspaceId: string;
  cause?: string;
}

export function reloadQueue(o: QueueOptions): Queue<ReloadJobData> {
  const queue = new Queue<ReloadJobData>(RELOAD_QUEUE, {
    connection: o.redis,
    prefix: o.prefix,
    defaultJobOptions: {
      attempts: 8,
      backoff: { type: 'exponential', delay: 1000 },
      // Removed when done: the same job id can be added again later (the ledger, not the job id,
      // is what keeps a reload from being charged twice).
      removeOnComplete: true,
      removeOnFail: true,
    },
  });
  // Without a listener BullMQ prints every connection error's stack to stderr during a Redis
  // outage; the commands that fail and /readyz report it instead.
  queue.on('error', () => undefined);
  return queue;
}

export async function enqueueReload(
  queue: Queue<ReloadJobData>,
  workspaceId: string,
  revision: bigint | null,
  cause?: string,
): Promise<void> {
  await queue.add('reload', { workspaceId, cause }, { jobId: reloadJobId(workspaceId, revision) });
}
