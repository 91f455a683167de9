import { Job, Worker } from 'bullmq';
import type { Services } from '../../../services';
import { bullPrefix } from '../../../billing';
import { sendDelivery, type SendResult } from './send';
import { WEBHOOK_QUEUE, type DeliveryJobData } from './queue';

/** The BullMQ worker that sends webhook deliveries (./send.ts), one job per (endpoint, event). */
export async function startWebhookWorker(s: Services, opts: { concurrency?: number } = {}): Promise<{ close(): Promise<void> }> {
  const log = s.log.child({ part: 'webhooks' });
  const worker = new Worker<DeliveryJobData, SendResult>(
    WEBHOOK_QUEUE,
    async (job: Job<DeliveryJobData>) => sendDelivery({ store: s.store, newId: s.newId, now: s.now, log, redis: s.redis, ks: s.ks, config: s.config }, job),
    {
      connection: await s.connectRedis('webhook-worker', { maxRetriesPerRequest: null }),
      prefix: bullPrefix(s.config),
      concurrency: opts.concurrency ?? 8,
    },
  );
  worker.on('failed', (job, err) => log.info({ jobId: job?.id, attemptsMade: job?.attemptsMade, err: err.message }, 'webhook delivery attempt failed'));
  worker.on('error', (err) => log.error({ err }, 'webhook worker error'));
  return {
    async close() {
      const graceful = worker.close();
      const timedOut = await Promise.race([graceful.then(() => false), new Promise<boolean>((r) => setTimeout(() => r(true), 5000).unref())]);
      if (timedOut) await worker.close(true).catch(() => undefined);
    },
  };
}
