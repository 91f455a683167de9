import type { Queue } from 'bullmq';
import type {
  AttachedPaymentMethod,
  ChargeRequest,
  ChargeResult,
  PaymentGateway,
  PaymentRecord,
  RefundRequest,
  RefundResult,
} from '../../src/billing/payments/port';
import { GatewayRejected, GatewayUnavailable, toCents } from '../../src/billing/payments/port';
import { type GenerateParams, type ModelBackend, UpstreamError } from '../../src/inference/backend';
import type { ModelConfig } from '../../src/inference/events';
import type { ReloadJobData } from '../../src/billing/workers/auto-reload/queue';
import type { Outcome, World } from './world';

/**
 * The simulated payment gateway, model upstream and job queue. Each call is a world step with the
 * faults its real counterpart has: a charge may time out after the card was charged (ack_lost:
 * "payment timeout after the charge"), a stream may be cut, a job delivered twice.
 */

const CHARGE_FAULTS: readonly Outcome[] = ['delay', 'unavailable', 'ack_lost', 'crash_before', 'crash_after', 'twice'];

export interface ChargeMade {
  idempotencyKey: string;
  paymentIntentId: string;
  amountNanoUsd: bigint;
  metadata: Record<string, string>;
  status: ChargeResult['status'];
}

/** A card network: charges are kept per idempotency key, as Stripe keeps them (a re-send returns the first). */
export class SimGateway implements PaymentGateway {
  readonly kind = 'sandbox' as const;
  /** Every charge the card really took (what the invariants compare the ledger with). */
  readonly charges: ChargeMade[] = [];
  private readonly byKey = new Map<string, ChargeResult>();
  private readonly records = new Map<string, PaymentRecord>();
  /** Cards that decline (drawn per seed). */
  declines = new Set<string>();

  constructor(private readonly world: World) {}

  async attachPaymentMethod(req: {
    workspaceId: string;
    customerId: string | null;
    paymentMethodId: string;
  }): Promise<AttachedPaymentMethod> {
    return { paymentMethodId: req.paymentMethodId, brand: 'visa', last4: '4242', customerId: req.customerId };
  }

  private readonly refundsByKey = new Map<string, RefundResult>();

  /** Refunds are not simulated with faults: kept per key, at most what the charge took. */
  async refund(req: RefundRequest): Promise<RefundResult> {
    const known = this.refundsByKey.get(req.idempotencyKey);
    if (known) return known;
    const rec = this.records.get(req.paymentIntentId);
    if (!rec || rec.status !== 'succeeded')
      throw new GatewayRejected('charge_not_refundable', `No succeeded payment ${req.paymentIntentId}`);
    let refunded = 0n;
    for (const r of this.refundsByKey.values()) if (r.paymentIntentId === req.paymentIntentId) refunded += r.amountNanoUsd;
    if (req.amountNanoUsd > rec.amountNanoUsd - refunded)
      throw new GatewayRejected('amount_too_large', 'Refund amount is greater than the unrefunded amount');
    const r: RefundResult = {
      refundId: `re_sim_${this.refundsByKey.size + 1}`,
      paymentIntentId: req.paymentIntentId,
      amountNanoUsd: req.amountNanoUsd,
      status: 'succeeded',
    };
    this.refundsByKey.set(req.idempotencyKey, r);
    return r;
  }

  charge(req: ChargeRequest): Promise<ChargeResult> {
    toCents(req.amountNanoUsd);
    return this.world.call(
      'gateway',
      `charge ${req.metadata.tollgate_kind ?? ''} ${req.amountNanoUsd}`,
      null,
      CHARGE_FAULTS,
      () => {
        const known = this.byKey.get(req.idempotencyKey);
        if (known) return known;
        const paymentIntentId = `pi_sim_${this.charges.length + 1}`;
        const declined = this.declines.has(req.paymentMethodId);
        const result: ChargeResult = declined
          ? { status: 'failed', paymentIntentId, code: 'card_declined', declineCode: 'generic_decline', reason: 'Your card was declined.' }
          : { status: 'succeeded', paymentIntentId, amountNanoUsd: req.amountNanoUsd };
        this.byKey.set(req.idempotencyKey, result);
        this.charges.push({
          idempotencyKey: req.idempotencyKey,
          paymentIntentId,
          amountNanoUsd: req.amountNanoUsd,
          metadata: req.metadata,
          status: result.status,
        });
        this.records.set(paymentIntentId, {
          paymentIntentId,
          status: declined ? 'failed' : 'succeeded',
          amountNanoUsd: req.amountNanoUsd,
          metadata: req.metadata,
          created: new Date(this.world.nowMs()).toISOString(),
        });
        return result;
      },
      (o) => new GatewayUnavailable(`payment gateway did not answer (simulated: ${o})`),
    );
  }

  async retrieve(paymentIntentId: string): Promise<PaymentRecord> {
    const r = this.records.get(paymentIntentId);
    if (!r) throw new GatewayUnavailable(`no payment ${paymentIntentId}`);
    return r;
  }

  async cancel(paymentIntentId: string): Promise<PaymentRecord> {
    return this.retrieve(paymentIntentId);
  }

  async *listPayments(): AsyncIterable<PaymentRecord> {
    yield* this.records.values();
  }
}

const WORDS = [
  'the',
  'sea',
  'was',
  'calm',
  'and',
  'a',
  'ship',
  'sailed',
  'past',
  'old',
  'lighthouse',
  'at',
  'dawn',
  'while',
  'gulls',
  'cried',
];
const UPSTREAM_FAULTS: readonly Outcome[] = ['delay', 'unavailable'];

/** The model upstream: a reply of seeded length, one step per chunk; a fault cuts the stream. */
export class SimModel implements ModelBackend {
  readonly kind = 'sim';
  /** Set by the world between steps: this many next chunks (of any stream) fail. */
  cutNext = 0;

  constructor(private readonly world: World) {}

  modelName(config: ModelConfig): string {
    return `sim-${config}`;
  }

  async *generate(params: GenerateParams): AsyncGenerator<string, 'stop' | 'length' | void, undefined> {
    const words = this.world.rng.between(1, Math.min(params.maxTokens + 5, 40));
    // Words arrive a few at a time (as a real upstream's chunks do): one step per chunk.
    const per = this.world.rng.between(1, 6);
    const chunks = Math.ceil(words / per);
    for (let i = 0; i < chunks; i++) {
      if (params.signal.aborted) return;
      const text = await this.world.call(
        'upstream',
        `chunk ${i + 1}/${chunks}`,
        null,
        UPSTREAM_FAULTS,
        () => {
          if (this.cutNext > 0) {
            this.cutNext--;
            throw new UpstreamError('upstream stream cut (simulated)');
          }
          let out = '';
          for (let w = i * per; w < Math.min(words, (i + 1) * per); w++) out += ` ${WORDS[(params.seed + w) % WORDS.length]}`;
          return out;
        },
        () => new UpstreamError('upstream stream cut (simulated)', 502),
      );
      yield text;
    }
    return 'stop';
  }
}

export interface SimJob {
  jobId: string;
  data: ReloadJobData;
  attempts: number;
  /** Virtual time before which it is not handed out (backoff, or locked by a worker that may have died). */
  notBefore: number;
  active: boolean;
}

const QUEUE_FAULTS: readonly Outcome[] = ['delay', 'unavailable', 'ack_lost', 'twice'];

/** BullMQ's contract as the reload reactor and worker use it: add by job id (one per id until removed), at least once. */
export class SimQueue {
  readonly jobs = new Map<string, SimJob>();
  added = 0;

  constructor(private readonly world: World) {}

  /** The slice of Queue the reactor calls. */
  asQueue(): Queue<ReloadJobData> {
    return {
      add: (name: string, data: ReloadJobData, opts?: { jobId?: string }) => this.add(data, opts?.jobId ?? `job-${++this.added}`),
    } as unknown as Queue<ReloadJobData>;
  }

  private add(data: ReloadJobData, jobId: string): Promise<{ id: string }> {
    return this.world.call(
      'queue',
      `add ${jobId.slice(0, 24)}`,
      null,
      QUEUE_FAULTS,
      () => {
        if (!this.jobs.has(jobId)) this.jobs.set(jobId, { jobId, data, attempts: 0, notBefore: this.world.now, active: false });
        return { id: jobId };
      },
      (o) => new Error(`queue unavailable (simulated: ${o})`),
    );
  }

  /** The next job a worker may take, locked for `lockMs` (a worker that dies leaves it to be redelivered). */
  take(lockMs: number): SimJob | null {
    for (const j of this.jobs.values()) {
      if (j.notBefore <= this.world.now) {
        j.active = true;
        j.attempts++;
        j.notBefore = this.world.now + lockMs;
        return j;
      }
    }
    return null;
  }

  done(j: SimJob): void {
    this.jobs.delete(j.jobId);
  }

  failed(j: SimJob): void {
    j.active = false;
    if (j.attempts >= 8) this.jobs.delete(j.jobId);
    else j.notBefore = this.world.now + 1000 * 2 ** Math.min(j.attempts, 6);
  }
}
