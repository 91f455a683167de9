import { Router } from 'express';
import { GatewayRejected, GatewayUnavailable, PaymentRecord } from '../payments/port';
import { paymentStatusOf, StripeGateway } from '../payments/stripe';
import { fromCents } from '../payments/port';
import type { Services } from '../../services';
import { settleFromPayment } from '../usecases';
import { HttpError } from '../../platform/http/middleware/errors';
import { deferValidation, mount } from '../../platform/http/mount';
import { paymentIntentObject, PaymentIntentObject, stripeEventHead, stripeWebhook } from './stripe-webhook-schemas';

/**
 * POST /webhooks/stripe. The signature (Stripe-Signature over the raw body, STRIPE_WEBHOOK_SECRET)
 * is verified; events are deduplicated by Stripe's event id; a payment_intent.* event settles the
 * deposit or reload named in the PaymentIntent's metadata — typically one whose answer was lost.
 *
 * Order does not matter: the PaymentIntent is read back from Stripe and settled by its current
 * state, and the ledger keeps the first outcome of each deposit and reload.
 *
 *   {prefix}stripe-events:{eventId}   "processing" (5 min) → "done" (30 days)
 */
const HANDLED = new Set(['payment_intent.succeeded', 'payment_intent.payment_failed', 'payment_intent.canceled']);

/** How far a signature's timestamp may lie from our clock, in either direction (Stripe's default is 300 s, past only). */
export const SIGNATURE_TOLERANCE_S = 300;

/** The `t=` of a Stripe-Signature header, in seconds, or null. */
function signedAt(header: string): number | null {
  const m = /(?:^|,)\s*t=(\d{1,12})\s*(?:,|$)/.exec(header);
  return m ? Number(m[1]) : null;
}

export function stripeWebhookRoutes(s: Services): Router {
  const r = Router();
  // The body is read only once its signature over the raw bytes holds, and parsed here (400s, not 422s).
  mount(
    r,
    stripeWebhook,
    deferValidation(async (req, res) => {
      const secret = s.config.STRIPE_WEBHOOK_SECRET;
      if (!secret) throw new HttpError(404, 'Stripe webhooks are not configured (STRIPE_WEBHOOK_SECRET is unset)');
      const raw = (req as unknown as { rawBody?: Buffer }).rawBody;
      const signature = req.header('stripe-signature');
      if (!raw || !signature) throw new HttpError(400, 'A signed Stripe event is required (Stripe-Signature header and a JSON body)');
      let event: ReturnType<typeof StripeGateway.verifyWebhook>;
      try {
        event = StripeGateway.verifyWebhook(raw, signature, secret, SIGNATURE_TOLERANCE_S);
      } catch {
        throw new HttpError(400, 'Invalid Stripe signature');
      }
      if (!stripeEventHead.safeParse(event).success) {
        throw new HttpError(400, 'Malformed Stripe event: id must be an event id (evt_…) and type a string');
      }
      // Stripe's check refuses only old timestamps; one from the future is as suspect as a replay.
      const t = signedAt(signature);
      if (t === null || Math.abs(s.now().getTime() / 1000 - t) > SIGNATURE_TOLERANCE_S) {
        throw new HttpError(400, `Stripe signature timestamp is more than ${SIGNATURE_TOLERANCE_S} s away from the server's clock`);
      }
      let pi: PaymentIntentObject | null = null;
      if (HANDLED.has(event.type)) {
        const parsed = paymentIntentObject.safeParse((event.data as { object?: unknown } | undefined)?.object);
        if (!parsed.success) {
          const where = parsed.error.issues.map((i) => `data.object.${i.path.join('.') || '(root)'}: ${i.message}`).slice(0, 3);
          throw new HttpError(400, `Malformed ${event.type} event: ${where.join('; ')}`);
        }
        pi = parsed.data;
      }
      const key = s.ks.shared('stripe-events', event.id);
      const claimed = await s.redis.set(key, 'processing', 'EX', 300, 'NX');
      if (claimed === null) {
        const state = await s.redis.get(key);
        if (state === 'done') return void res.json({ received: true, duplicate: true });
        // Another delivery of this event is being handled right now: let Stripe try again later.
        throw new HttpError(409, 'This event is being processed');
      }
      try {
        const result = pi ? await handlePaymentIntent(s, pi, event.id) : 'ignored';
        await s.redis.set(key, 'done', 'EX', 30 * 86400);
        res.json({ received: true, result });
      } catch (err) {
        await s.redis.del(key);
        if (err instanceof GatewayUnavailable)
          throw new HttpError(503, 'The payment provider is unavailable; retry', { 'Retry-After': '5' });
        throw err;
      }
    }),
  );
  return r;
}

async function handlePaymentIntent(s: Services, pi: PaymentIntentObject, eventId: string) {
  if (!pi?.metadata?.tollgate_kind) return 'ignored';
  // Read the PaymentIntent's current state rather than trust the event's snapshot (events arrive
  // out of order); fall back to the snapshot when the gateway does not know it (sandbox).
  let current: PaymentRecord;
  try {
    current = await s.gateway.retrieve(pi.id);
  } catch (err) {
    if (!(err instanceof GatewayRejected)) throw err;
    current = {
      paymentIntentId: pi.id,
      status: paymentStatusOf(pi as never),
      amountNanoUsd: fromCents(pi.status === 'succeeded' ? pi.amount_received || pi.amount : pi.amount),
      metadata: pi.metadata ?? {},
      created: new Date(pi.created * 1000).toISOString(),
    };
  }
  return settleFromPayment(s, current, { actor: 'stripe-webhook', causationId: eventId, correlationId: current.metadata.ledger_id });
}
