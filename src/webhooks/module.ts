import type { Queue } from 'bullmq';
import { bullPrefix } from '../platform/bullmq';
import type { Module, Services } from '../services';
import { balanceAlertsProjection } from './balance-alerts/projection';
import { balanceAlertReactor } from './balance-alerts/reactor';
import { webhookRoutes } from './routes/webhook-routes';
import { WEBHOOK_QUEUE, webhookQueue, type WebhookJobData } from './workers/delivery/queue';
import { webhookReactor } from './workers/delivery/reactor';
import { startWebhookWorker } from './workers/delivery/worker';

/**
 * Outgoing webhooks (docs/WEBHOOKS.md): endpoints in webhooks-{ws}, a reactor that enqueues one
 * BullMQ job per (endpoint, event), the worker that signs and sends them and runs replays, and the
 * balance-alert projection and reactor that store low-balance crossings.
 */
const queues = new WeakMap<Services, Promise<Queue<WebhookJobData>>>();
function queueOf(s: Services): () => Promise<Queue<WebhookJobData>> {
  return () => {
    let q = queues.get(s);
    if (!q) {
      q = s
        .connectRedis('webhook-queue', { maxRetriesPerRequest: null })
        .then((redis) => webhookQueue({ redis, prefix: bullPrefix(s.config, WEBHOOK_QUEUE), config: s.config }));
      queues.set(s, q);
    }
    return q;
  };
}

export const webhooksModule: Module = {
  name: 'webhooks',
  projections: () => [balanceAlertsProjection],
  // The balance-alert reactor stores crossings first; the webhooks reactor then delivers them like any event.
  reactors: (s) => [balanceAlertReactor(s), webhookReactor({ store: s.store, redis: s.redis, ks: s.ks, queue: queueOf(s) })],
  router: (s) => webhookRoutes(s, queueOf(s)),
  startWorkers: (s) => startWebhookWorker(s, { queue: queueOf(s) }),
};
