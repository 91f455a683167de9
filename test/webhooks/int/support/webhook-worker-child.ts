/**
 * The webhook delivery worker as its own process, for the kill test (webhook-kill.test.ts): the
 * worker role's BullMQ worker over the service's Redis prefix and SQLite file (from the environment),
 * with a short job lock so a killed worker's job is taken over quickly. Prints "STARTED".
 */
import { loadConfig } from '../../../../src/platform/config';
import { createLogger } from '../../../../src/platform/log';
import { buildServices } from '../../../../src/init';
import { bullPrefix } from '../../../../src/platform/bullmq';
import { webhookQueue, WEBHOOK_QUEUE } from '../../../../src/webhooks/workers/delivery/queue';
import { startWebhookWorker } from '../../../../src/webhooks/workers/delivery/worker';

async function run(): Promise<void> {
  const config = loadConfig({ ROLE: 'worker', LOG_LEVEL: process.env.CHILD_LOG_LEVEL ?? 'silent' });
  const s = await buildServices(config, createLogger(config.LOG_LEVEL, { role: 'worker' }));
  const redis = await s.connectRedis('webhook-queue', { maxRetriesPerRequest: null });
  const queue = webhookQueue({ redis, prefix: bullPrefix(config, WEBHOOK_QUEUE), config });
  await startWebhookWorker(s, { queue: async () => queue, lockDurationMs: 1000, stalledIntervalMs: 300 });
}

run().then(
  () => process.stdout.write('STARTED\n'),
  (err) => {
    process.stderr.write(`child failed to start: ${(err as Error).message}\n`);
    process.exit(1);
  },
);
