import { z } from 'zod';
import { route, RouteContract } from '../../platform/http/contract';

/**
 * POST /webhooks/stripe. Its body is checked only after the signature over its raw bytes is
 * verified, and refusals are 400 naming the field (Stripe shows them in its dashboard), so the
 * handler parses with these schemas itself rather than through mount's 422 (deferValidation).
 */

const cents = z.number().int().min(0).max(Number.MAX_SAFE_INTEGER);

/** The part of a PaymentIntent that is read; a signed event that lacks it is refused, never half-used. */
export const paymentIntentObject = z.object({
  id: z.string().regex(/^pi_[A-Za-z0-9_]{1,255}$/, 'must be a PaymentIntent id (pi_…)'),
  status: z.string().max(64),
  amount: cents,
  amount_received: cents.nullish(),
  metadata: z.record(z.string(), z.string()).nullish(),
  created: z.number().int().min(0),
});
export type PaymentIntentObject = z.infer<typeof paymentIntentObject>;

/** What every signed event must carry before anything else is read. */
export const stripeEventHead = z.looseObject({
  id: z.string().regex(/^evt_[A-Za-z0-9_-]{1,255}$/),
  type: z.string().describe('payment_intent.succeeded, .payment_failed and .canceled are acted on; others are acknowledged and ignored'),
});

export const stripeEvent = stripeEventHead
  .extend({
    data: z.looseObject({
      object: z.looseObject({}).describe('For payment_intent.*: a PaymentIntent (id, status, amount, amount_received, metadata, created)'),
    }),
  })
  .meta({ id: 'StripeEvent', description: 'A Stripe event, as Stripe sends it' });

export const webhookResult = z.enum(['settled', 'already_settled', 'not_final', 'unknown_entry', 'ignored', 'mismatch']);

export const stripeWebhook = route({
  method: 'post',
  path: '/webhooks/stripe',
  summary: 'Stripe events: settles the deposit or reload a PaymentIntent names',
  description:
    'Verified with STRIPE_WEBHOOK_SECRET over the raw body (timestamp within 300 s either way), deduplicated by event id. ' +
    'The PaymentIntent is read back from Stripe and settled by its current state, so order and repeats do not matter.',
  tags: ['webhooks'],
  security: ['stripeSignature'],
  body: stripeEvent,
  responses: {
    200: {
      description: 'Received (a repeat of a handled event says duplicate)',
      schema: z.object({ received: z.literal(true), duplicate: z.literal(true).optional(), result: webhookResult.optional() }),
    },
    400: { description: 'Unsigned, badly signed, stale or malformed event' },
    404: { description: 'STRIPE_WEBHOOK_SECRET is unset' },
    409: { description: 'Another delivery of this event is being processed; Stripe retries later' },
    503: { description: 'The payment provider is unavailable; retry' },
  },
});

export const routes: RouteContract[] = [stripeWebhook];
