import { Job, Queue, Worker } from 'bullmq';
import type { Services } from '../../../services';
import { bullPrefix } from '../../../platform/bullmq';
import { sendDelivery, type SendResult } from './send';
import { runReplay } from './replay';
import { isReplayJob, WEBHOOK_QUEUE, type WebhookJobData } from './queue';

/**
 * The BullMQ worker of the webhook queue: deliveries (./send.ts), one job per (endpoint, event), and
 * replay scans (./replay.ts), which enqueue deliveries on the same queue.
 */
export async function startWebhookWorker(
  s: Services,
  opts: {
    queue: () => Promise<Queue<WebhookJobData>>;
    concurrency?: number;
    /** How long a job stays locked to this worker without a renewal (BullMQ's default 30 s); a killed worker's job runs again after it. */
    lockDurationMs?: number;
    stalledIntervalMs?: number;
  },
): Promise<{ close(): Promise<void> }> {
  const log = s.log.child({ part: 'webhooks' });
  const worker = new Worker<WebhookJobData, SendResult | 'enqueued'>(
    WEBHOOK_QUEUE,
    async (job: Job<WebhookJobData>) => {
      const data = job.data;
      if (isReplayJob(data))
        return runReplay({ store: s.store, redis: s.redis, ks: s.ks, queue: await opts.queue(), now: s.now }, { data });
      return sendDelivery(
        { store: s.store, newId: s.newId, now: s.now, log, redis: s.redis, ks: s.ks, config: s.config },
        { data, attemptsMade: job.attemptsMade, opts: job.opts },
      );
    },
    {
      connection: await s.connectRedis('webhook-worker', { maxRetriesPerRequest: null }),
      prefix: bullPrefix(s.config, WEBHOOK_QUEUE),
      concurrency: opts.concurrency ?? 8,
      lockDuration: opts.lockDurationMs ?? 30_000,
      stalledInterval: opts.stalledIntervalMs ?? 30_000,
      maxStalledCount: 5,
    },
  );
  worker.on('failed', (job, err) =>
    log.info({ jobId: job?.id, attemptsMade: job?.attemptsMade, err: err.message }, 'webhook delivery attempt failed'),
  );
  worker.on('error', (err) => log.error({ err }, 'webhook worker error'));
  return {
    async close() {
      const graceful = worker.close();
      const timedOut = await Promise.race([
        graceful.then(() => false),
        new Promise<boolean>((r) => setTimeout(() => r(true), 5000).unref()),
      ]);
      if (timedOut) await worker.close(true).catch(() => undefined);
    },
  };
}
