import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { Keyspace } from '../projections/keyspace';
import {
  AttachedPaymentMethod,
  ChargeRequest,
  ChargeResult,
  GatewayRejected,
  PaymentGateway,
  PaymentRecord,
  toCents,
} from './port';
import { chargeOutcome, TEST_CARDS } from './test-cards';

/**
 * The gateway used when STRIPE_SECRET_KEY is unset (and by `npm start`): no network, no money.
 * Outcomes follow Stripe's test payment-method ids (pm_card_visa succeeds, pm_card_chargeDeclined
 * declines, pm_card_authenticationRequired needs authentication). Its payments live in Redis under
 * the service's prefix, so the api and worker processes share them, idempotency keys replay the
 * first answer as Stripe's do, and `ledger reconcile` has something to compare with.
 *
 *   sandbox:idem:{idempotencyKey}  {fingerprint, result}   (kept 24 hours, like Stripe)
 *   sandbox:payments               hash paymentIntentId → PaymentRecord (JSON)
 */
export class SandboxGateway implements PaymentGateway {
  readonly kind = 'sandbox' as const;

  constructor(
    private readonly redis: Redis,
    private readonly ks: Keyspace,
  ) {}

  private idemKey(k: string) {
    return this.ks.shared('sandbox', 'idem', k);
  }

  private get paymentsKey() {
    return this.ks.shared('sandbox', 'payments');
  }

  async attachPaymentMethod(req: { workspaceId: string; customerId: string | null; paymentMethodId: string }): Promise<AttachedPaymentMethod> {
    const card = TEST_CARDS[req.paymentMethodId];
    if (!card) {
      throw new GatewayRejected(
        'resource_missing',
        `No such PaymentMethod: '${req.paymentMethodId}'. The sandbox (no STRIPE_SECRET_KEY) knows Stripe's test ids: ${Object.keys(TEST_CARDS).join(', ')}`,
      );
    }
    return { paymentMethodId: req.paymentMethodId, brand: card.brand, last4: card.last4, customerId: null };
  }

  async charge(req: ChargeRequest): Promise<ChargeResult> {
    const cents = toCents(req.amountNanoUsd);
    const fingerprint = createHash('sha256')
      .update(JSON.stringify([req.paymentMethodId, cents, req.offSession, req.metadata]))
      .digest('hex');
    const paymentIntentId = `pi_sbx_${createHash('sha256').update(req.idempotencyKey).digest('hex').slice(0, 24)}`;
    const previous = await this.redis.get(this.idemKey(req.idempotencyKey));
    if (previous) return replay(previous, fingerprint, req.idempotencyKey);

    const card = TEST_CARDS[req.paymentMethodId];
    const outcome = card
      ? chargeOutcome(card, req.offSession)
      : { code: 'resource_missing', declineCode: null, message: `No such PaymentMethod: '${req.paymentMethodId}'` };
    let result: ChargeResult;
    let status: PaymentRecord['status'];
    if (outcome === null) {
      result = { status: 'succeeded', paymentIntentId, amountNanoUsd: req.amountNanoUsd };
      status = 'succeeded';
    } else if (outcome === 'requires_action') {
      result = { status: 'requires_action', paymentIntentId };
      status = 'pending';
    } else {
      result = { status: 'failed', paymentIntentId, code: outcome.code, declineCode: outcome.declineCode, reason: outcome.message };
      status = 'failed';
    }
    const record: PaymentRecord = {
      paymentIntentId,
      status,
      amountNanoUsd: req.amountNanoUsd,
      metadata: req.metadata,
      created: new Date().toISOString(),
      failureCode: result.status === 'failed' ? (result.declineCode ?? result.code) : null,
      failureMessage: result.status === 'failed' ? result.reason : null,
    };
    const stored = JSON.stringify({ fingerprint, result: serialize(result) });
    // The first writer wins; a concurrent request with the same key replays its answer.
    const won = await this.redis.set(this.idemKey(req.idempotencyKey), stored, 'EX', 24 * 3600, 'NX');
    if (won === null) return replay((await this.redis.get(this.idemKey(req.idempotencyKey)))!, fingerprint, req.idempotencyKey);
    await this.redis.hset(this.paymentsKey, paymentIntentId, JSON.stringify({ ...record, amountNanoUsd: record.amountNanoUsd.toString() }));
    return result;
  }

  async retrieve(paymentIntentId: string): Promise<PaymentRecord> {
    const raw = await this.redis.hget(this.paymentsKey, paymentIntentId);
    if (!raw) throw new GatewayRejected('resource_missing', `No such payment_intent: '${paymentIntentId}'`, 404);
    return parseRecord(raw);
  }

  async cancel(paymentIntentId: string): Promise<PaymentRecord> {
    const rec = await this.retrieve(paymentIntentId);
    if (rec.status === 'succeeded') throw new GatewayRejected('payment_intent_unexpected_state', 'A succeeded PaymentIntent cannot be canceled');
    const next = { ...rec, status: 'canceled' as const };
    await this.redis.hset(this.paymentsKey, paymentIntentId, JSON.stringify({ ...next, amountNanoUsd: next.amountNanoUsd.toString() }));
    return next;
  }

  async *listPayments(): AsyncIterable<PaymentRecord> {
    let cursor = '0';
    do {
      const [next, flat] = await this.redis.hscan(this.paymentsKey, cursor, 'COUNT', 500);
      cursor = next;
      for (let i = 1; i < flat.length; i += 2) yield parseRecord(flat[i]);
    } while (cursor !== '0');
  }
}

function serialize(r: ChargeResult) {
  return r.status === 'succeeded' ? { ...r, amountNanoUsd: r.amountNanoUsd.toString() } : r;
}

function replay(stored: string, fingerprint: string, key: string): ChargeResult {
  const { fingerprint: fp, result } = JSON.parse(stored) as { fingerprint: string; result: Record<string, unknown> };
  if (fp !== fingerprint) {
    throw new GatewayRejected(
      'idempotency_error',
      `Keys for idempotent requests can only be used with the same parameters they were first used with (key ${key})`,
    );
  }
  if (result.status === 'succeeded') return { ...(result as object), amountNanoUsd: BigInt(result.amountNanoUsd as string) } as ChargeResult;
  return result as unknown as ChargeResult;
}

function parseRecord(raw: string): PaymentRecord {
  const r = JSON.parse(raw) as Omit<PaymentRecord, 'amountNanoUsd'> & { amountNanoUsd: string };
  return { ...r, amountNanoUsd: BigInt(r.amountNanoUsd) };
}
