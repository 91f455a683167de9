import type { Queue } from 'bullmq';
import { bullPrefix } from '../billing';
import type { Module, Services } from '../services';
import { webhookRoutes } from './routes/webhook-routes';
import { webhookQueue, type DeliveryJobData } from './workers/delivery/queue';
import { webhookReactor } from './workers/delivery/reactor';
import { startWebhookWorker } from './workers/delivery/worker';

/**
 * Outgoing webhooks (docs/WEBHOOKS.md): endpoints in webhooks-{ws}, a reactor that enqueues one
 * BullMQ job per (endpoint, event), and the worker that signs and sends them.
 */
const queues = new WeakMap<Services, Promise<Queue<DeliveryJobData>>>();
function queueOf(s: Services): () => Promise<Queue<DeliveryJobData>> {
  return () => {
    let q = queues.get(s);
    if (!q) {
      q = s.connectRedis('webhook-queue', { maxRetriesPerRequest: null }).then((redis) => webhookQueue({ redis, prefix: bullPrefix(s.config), config: s.config }));
      queues.set(s, q);
    }
    return q;
  };
}

export const webhooksModule: Module = {
  name: 'webhooks',
  reactors: (s) => [webhookReactor({ store: s.store, redis: s.redis, ks: s.ks, queue: queueOf(s) })],
  router: (s) => webhookRoutes(s, queueOf(s)),
  startWorkers: (s) => startWebhookWorker(s),
};
