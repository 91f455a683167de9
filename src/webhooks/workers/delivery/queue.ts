import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Config } from '../../../platform/config';

// The BullMQ queue of webhook deliveries: one job per (endpoint, event), retried with exponential backoff.

export const WEBHOOK_QUEUE = 'webhook-delivery';

export interface DeliveryJobData {
  workspaceId: string;
  endpointId: string;
  /** The stored event's id: the delivery id and webhook-id. */
  eventId: string;
  /** Set on a resend: sent even when an earlier delivery of the event succeeded. */
  resend?: number;
  /** Set on a replayed delivery: the replay it belongs to (sent even when delivered before). */
  replay?: string;
}

/** The job that scans the log for a replay and enqueues its deliveries (./replay.ts); its job id is the replay id. */
export interface ReplayJobData {
  workspaceId: string;
  endpointId: string;
  replayId: string;
}

export type WebhookJobData = DeliveryJobData | ReplayJobData;
export const isReplayJob = (d: WebhookJobData): d is ReplayJobData => 'replayId' in d;

/** Deterministic: the same event is enqueued once per endpoint however often the reactor sees it. A resend adds a suffix. */
export const deliveryJobId = (endpointId: string, eventId: string, resend?: number) =>
  `wh-${endpointId}-${eventId}${resend === undefined ? '' : `-resend-${resend}`}`;
export const replayDeliveryJobId = (endpointId: string, eventId: string, replayId: string) => `wh-${endpointId}-${eventId}-${replayId}`;

export function webhookQueue(o: {
  redis: Redis;
  prefix: string;
  config: Pick<Config, 'WEBHOOKS_MAX_ATTEMPTS' | 'WEBHOOKS_RETRY_BASE_MS'>;
}): Queue<WebhookJobData> {
  const queue = new Queue<WebhookJobData>(WEBHOOK_QUEUE, {
    connection: o.redis,
    prefix: o.prefix,
    defaultJobOptions: {
      attempts: o.config.WEBHOOKS_MAX_ATTEMPTS,
      backoff: { type: 'exponential', delay: o.config.WEBHOOKS_RETRY_BASE_MS },
      // Kept (bounded) so the same job id is not enqueued twice by a reactor that sees an event again.
      removeOnComplete: { count: 10_000 },
      removeOnFail: { count: 10_000 },
    },
  });
  queue.on('error', () => undefined);
  return queue;
}
