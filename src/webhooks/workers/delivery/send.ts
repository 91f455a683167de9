import type { Job } from 'bullmq';
import type { Redis } from 'ioredis';
import { Webhook } from 'standardwebhooks';
import { Agent, fetch } from 'undici';
import { postNotice } from '../../../accounts';
import type { Keyspace } from '../../../platform/projections/keyspace';
import type { Services } from '../../../services';
import { getDelivery, recordAttempt, setStatus } from '../../deliveries';
import { disabledNoticeId } from '../../disabled-notice';
import { guardedLookup, targetProblem } from '../../target-guard';
import { disableEndpoint, endpointOf } from '../../usecases';
import { replayProgress } from '../../replays';
import type { DeliveryJobData } from './queue';

export type SendDeps = Pick<Services, 'store' | 'newId' | 'now' | 'log'> & {
  redis: Redis;
  ks: Keyspace;
  config: Pick<Services['config'], 'WEBHOOKS_ALLOW_PRIVATE_TARGETS' | 'WEBHOOKS_TIMEOUT_MS'>;
};

export type SendResult = 'succeeded' | 'skipped';

// Connects only to addresses the guard accepts, checked on the very addresses the socket opens to.
let guarded: Agent | undefined;
const guardedAgent = () => (guarded ??= new Agent({ connect: { lookup: guardedLookup } }));

/**
 * One attempt of one delivery: sign the stored payload with the endpoint's current secret and POST
 * it. A non-2xx answer, no answer or a refused target throws, so BullMQ retries with backoff; the
 * last failed attempt disables the endpoint and tells the workspace's admins.
 */
export async function sendDelivery(d: SendDeps, job: Pick<Job<DeliveryJobData>, 'data' | 'attemptsMade' | 'opts'>): Promise<SendResult> {
  const { workspaceId, endpointId, eventId, resend, replay } = job.data;
  // A resend or a replay is asked for by an admin: sent even when an earlier delivery succeeded.
  const asked = resend !== undefined || replay !== undefined;
  const replayOutcome = (ok: boolean) => (replay ? replayProgress.outcome(d.redis, d.ks, replay, eventId, ok) : undefined);
  const delivery = await getDelivery(d.redis, d.ks, endpointId, eventId);
  if (!delivery) {
    // Nothing to send (its record expired): still an outcome, or the replay would count as running.
    await replayOutcome(false);
    return 'skipped';
  }
  if (delivery.status === 'succeeded' && !asked) return 'skipped';
  const ep = await endpointOf(d, workspaceId, endpointId);
  if (!ep || ep.status !== 'enabled') {
    await setStatus(d.redis, d.ks, delivery, 'skipped');
    await replayOutcome(false);
    return 'skipped';
  }
  const at = d.now();
  let status: number | null = null;
  let error: string | null = null;
  const refused = await targetProblem(ep.url, d.config.WEBHOOKS_ALLOW_PRIVATE_TARGETS);
  if (refused) error = `refused: ${refused}`;
  else {
    try {
      const signature = new Webhook(ep.secret).sign(eventId, at, delivery.payload);
      const res = await fetch(ep.url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'user-agent': 'tollgate-webhooks',
          'webhook-id': eventId,
          'webhook-timestamp': Math.floor(at.getTime() / 1000).toString(),
          'webhook-signature': signature,
        },
        body: delivery.payload,
        // A redirect could lead to a private address the guard never saw.
        redirect: 'manual',
        ...(d.config.WEBHOOKS_ALLOW_PRIVATE_TARGETS ? {} : { dispatcher: guardedAgent() }),
        signal: AbortSignal.timeout(d.config.WEBHOOKS_TIMEOUT_MS),
      });
      status = res.status;
      await res.arrayBuffer().catch(() => undefined);
      if (status < 200 || status > 299) error = `HTTP ${status}`;
    } catch (err) {
      const cause = (err as Error & { cause?: Error }).cause;
      error = cause?.message ? `${(err as Error).message}: ${cause.message}` : (err as Error).message;
    }
  }
  if (error === null) {
    await recordAttempt(d.redis, d.ks, delivery, { at: at.toISOString(), status, error }, 'succeeded');
    await replayOutcome(true);
    return 'succeeded';
  }
  const last = job.attemptsMade + 1 >= (job.opts.attempts ?? 1);
  await recordAttempt(d.redis, d.ks, delivery, { at: at.toISOString(), status, error }, last ? 'failed' : 'pending');
  if (last) await replayOutcome(false);
  // Only live deliveries disable an endpoint: an admin's resend or replay reports its own outcome.
  if (last && !asked) {
    const reason = `Every attempt to deliver event ${eventId} failed; last: ${error}`;
    if (await disableEndpoint(d, { workspaceId, endpointId, eventId, reason })) {
      await postNotice(
        d.redis,
        d.ks,
        { workspaceId },
        {
          id: disabledNoticeId(endpointId),
          kind: 'webhook_endpoint_disabled',
          message: `Webhook endpoint ${ep.url} was disabled: ${reason}`,
          workspaceId,
          audience: 'admins',
          created: at.toISOString(),
        },
      );
    }
  }
  throw new Error(`webhook delivery failed: ${error}`);
}
