import { createHash } from 'node:crypto';
import { closeSync, existsSync, fsyncSync, openSync, readFileSync, writeSync } from 'node:fs';
import type { Redis } from 'ioredis';
import type { Keyspace } from '../../platform/projections/keyspace';
import {
  AttachedPaymentMethod,
  ChargeRequest,
  ChargeResult,
  GatewayRejected,
  GatewayUnavailable,
  PaymentGateway,
  PaymentRecord,
  RefundRequest,
  RefundResult,
  toCents,
} from './port';
import { testCardResponse, TEST_CARDS } from './test-cards';

/**
 * The gateway used when STRIPE_SECRET_KEY is unset (and by `npm start`): no network, no money.
 * Outcomes follow Stripe's test payment-method ids (pm_card_visa succeeds, pm_card_chargeDeclined
 * declines, pm_card_authenticationRequired needs authentication). Idempotency keys replay the
 * first answer as Stripe's do, and `ledger reconcile` has something to compare with.
 *
 * Its payments are kept where a Redis loss cannot take them, like a real gateway's: a JSON-lines
 * file beside the event store (`${DATA_DIR}/sandbox-payments.jsonl`, appended and fsynced, shared
 * by the processes of one machine), one line per change, the last line of a payment winning.
 * Redis only decides who answers first when two processes charge one key at once:
 *
 *   sandbox:idem:{idempotencyKey}  {fingerprint, result}   (kept 24 hours, like Stripe)
 */
export class SandboxGateway implements PaymentGateway {
  readonly kind = 'sandbox' as const;

  constructor(
    private readonly redis: Redis,
    private readonly ks: Keyspace,
    /** The payments file (see above). */
    private readonly file: string,
  ) {}

  private idemKey(k: string) {
    return this.ks.shared('sandbox', 'idem', k);
  }

  /** Every payment in the file: the last line of each wins; `first` keeps its first answer. */
  private load(): Map<string, { record: PaymentRecord; first: string | null }> {
    const out = new Map<string, { record: PaymentRecord; first: string | null }>();
    if (!existsSync(this.file)) return out;
    for (const line of readFileSync(this.file, 'utf8').split('\n')) {
      if (!line.trim()) continue;
      let row: PaymentLine;
      try {
        row = JSON.parse(line) as PaymentLine;
      } catch {
        continue; // a line cut short by a crash
      }
      if (!row.record) continue; // a refund's line
      const prev = out.get(row.record.paymentIntentId);
      out.set(row.record.paymentIntentId, { record: parseRecord(JSON.stringify(row.record)), first: prev?.first ?? row.answer ?? null });
    }
    return out;
  }

  private save(record: PaymentRecord, answer?: string): void {
    this.append({ record: { ...record, amountNanoUsd: record.amountNanoUsd.toString() }, ...(answer ? { answer } : {}) });
  }

  /** The refunds in the file by their idempotency key. */
  private refunds(): Map<string, RefundLine> {
    const out = new Map<string, RefundLine>();
    if (!existsSync(this.file)) return out;
    for (const line of readFileSync(this.file, 'utf8').split('\n')) {
      try {
        const row = JSON.parse(line) as PaymentLine | { refund: RefundLine };
        if ('refund' in row) out.set(row.refund.key, row.refund);
      } catch {
        continue;
      }
    }
    return out;
  }

  /**
   * Like Stripe's: at most what the payment has not refunded, replayed by its key (another amount
   * or payment with the same key is refused). Two different keys at once are not serialized here:
   * the ledger serializes refunds of one deposit before it asks (billing-{ws}'s revision).
   */
  async refund(req: RefundRequest): Promise<RefundResult> {
    const cents = toCents(req.amountNanoUsd);
    const all = this.refunds();
    const known = all.get(req.idempotencyKey);
    const result = (r: RefundLine): RefundResult => ({
      refundId: r.refundId,
      paymentIntentId: r.paymentIntentId,
      amountNanoUsd: BigInt(r.amountNanoUsd),
      status: 'succeeded',
    });
    if (known) {
      if (known.paymentIntentId !== req.paymentIntentId || BigInt(known.amountNanoUsd) !== req.amountNanoUsd) {
        throw new GatewayRejected(
          'idempotency_error',
          `Keys for idempotent requests can only be used with the same parameters they were first used with (key ${req.idempotencyKey})`,
        );
      }
      return result(known);
    }
    const pay = this.load().get(req.paymentIntentId)?.record;
    if (!pay) throw new GatewayRejected('resource_missing', `No such payment_intent: '${req.paymentIntentId}'`, 404);
    if (pay.status !== 'succeeded')
      throw new GatewayRejected('charge_not_refundable', `PaymentIntent ${pay.paymentIntentId} has not succeeded`);
    let refunded = 0n;
    for (const r of all.values()) if (r.paymentIntentId === req.paymentIntentId) refunded += BigInt(r.amountNanoUsd);
    if (cents <= 0 || req.amountNanoUsd > pay.amountNanoUsd - refunded) {
      throw new GatewayRejected(
        'amount_too_large',
        `Refund amount is greater than the unrefunded amount on the payment (${pay.amountNanoUsd - refunded} nano-USD)`,
      );
    }
    const line: RefundLine = {
      key: req.idempotencyKey,
      refundId: `re_sbx_${createHash('sha256').update(req.idempotencyKey).digest('hex').slice(0, 24)}`,
      paymentIntentId: req.paymentIntentId,
      amountNanoUsd: req.amountNanoUsd.toString(),
      metadata: req.metadata,
      created: new Date().toISOString(),
    };
    const won = await this.redis.set(this.idemKey(`refund:${req.idempotencyKey}`), '1', 'EX', 24 * 3600, 'NX');
    if (won === null) {
      // Another process is refunding with this key: its answer, once written; until then, unknown.
      const theirs = this.refunds().get(req.idempotencyKey);
      if (theirs) return result(theirs);
      throw new GatewayUnavailable(`A refund with the key ${req.idempotencyKey} is in progress`);
    }
    this.append({ refund: line });
    return result(line);
  }

  private append(line: PaymentLine | { refund: RefundLine }): void {
    const fd = openSync(this.file, 'a');
    try {
      writeSync(fd, JSON.stringify(line) + '\n');
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
  }

  async attachPaymentMethod(req: {
    workspaceId: string;
    customerId: string | null;
    paymentMethodId: string;
  }): Promise<AttachedPaymentMethod> {
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
    // After a Redis loss the file still has the first answer (the id derives from the key).
    const kept = this.load().get(paymentIntentId)?.first;
    if (kept) return replay(kept, fingerprint, req.idempotencyKey);

    const card = TEST_CARDS[req.paymentMethodId];
    const outcome = card
      ? testCardResponse(card, req.offSession)
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
    this.save(record, stored);
    return result;
  }

  async retrieve(paymentIntentId: string): Promise<PaymentRecord> {
    const found = this.load().get(paymentIntentId);
    if (!found) throw new GatewayRejected('resource_missing', `No such payment_intent: '${paymentIntentId}'`, 404);
    return found.record;
  }

  async cancel(paymentIntentId: string): Promise<PaymentRecord> {
    const rec = await this.retrieve(paymentIntentId);
    if (rec.status === 'succeeded')
      throw new GatewayRejected('payment_intent_unexpected_state', 'A succeeded PaymentIntent cannot be canceled');
    const next = { ...rec, status: 'canceled' as const };
    this.save(next);
    return next;
  }

  async *listPayments(): AsyncIterable<PaymentRecord> {
    for (const { record } of this.load().values()) yield record;
  }
}

/** A refund's line in the payments file. */
interface RefundLine {
  key: string;
  refundId: string;
  paymentIntentId: string;
  amountNanoUsd: string;
  metadata: Record<string, string>;
  created: string;
}

/** One line of the payments file: the record as it now is, and the first answer when charged. */
interface PaymentLine {
  record: Omit<PaymentRecord, 'amountNanoUsd'> & { amountNanoUsd: string };
  answer?: string;
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
  if (result.status === 'succeeded')
    return { ...(result as object), amountNanoUsd: BigInt(result.amountNanoUsd as string) } as ChargeResult;
  return result as unknown as ChargeResult;
}

function parseRecord(raw: string): PaymentRecord {
  const r = JSON.parse(raw) as Omit<PaymentRecord, 'amountNanoUsd'> & { amountNanoUsd: string };
  return { ...r, amountNanoUsd: BigInt(r.amountNanoUsd) };
}
