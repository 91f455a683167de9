import type { NanoUsd } from '../../platform/money';

/**
 * The PaymentGateway port. Adapters: ./stripe (the real SDK) and ./sandbox (no network; outcomes by
 * Stripe's test payment-method ids). Every charge carries an idempotency key derived from the ledger
 * (`deposit-{depositId}`, `reload-{reloadId}`): sending it again returns the first answer and never
 * charges twice.
 *
 * Amounts are nano-USD in and out; cards are charged in cents, so a charge must be whole cents.
 */
export type GatewayKind = 'stripe' | 'sandbox';

export interface AttachedPaymentMethod {
  /** The id to charge (Stripe gives a magic test id such as pm_card_visa a new pm_… id when attached). */
  paymentMethodId: string;
  brand: string;
  last4: string;
  /** The gateway's customer (cus_…), or null in the sandbox. */
  customerId: string | null;
}

export interface ChargeRequest {
  idempotencyKey: string;
  customerId: string | null;
  paymentMethodId: string;
  amountNanoUsd: NanoUsd;
  /** true for auto-reloads (no customer present), false for deposits made by an admin in the portal. */
  offSession: boolean;
  description: string;
  /** Written on the PaymentIntent: lets a webhook and reconcile find the ledger entry. */
  metadata: Record<string, string>;
}

export type ChargeResult =
  | { status: 'succeeded'; paymentIntentId: string; amountNanoUsd: NanoUsd }
  | { status: 'failed'; paymentIntentId: string | null; code: string; declineCode: string | null; reason: string }
  /** On-session charge that wants 3-D Secure: nobody is there to complete it, so the caller cancels it. */
  | { status: 'requires_action'; paymentIntentId: string };

export type PaymentStatus = 'succeeded' | 'failed' | 'pending' | 'canceled';

export interface PaymentRecord {
  paymentIntentId: string;
  status: PaymentStatus;
  amountNanoUsd: NanoUsd;
  metadata: Record<string, string>;
  /** ISO-8601 */
  created: string;
  /** Why it failed (the decline code when there is one), for a failed payment. */
  failureCode?: string | null;
  failureMessage?: string | null;
}

/** Gives back part or all of a succeeded payment. The key is derived from the ledger (`refund-{refundId}`). */
export interface RefundRequest {
  idempotencyKey: string;
  paymentIntentId: string;
  /** Whole cents, at most what the payment has not refunded yet (the gateway refuses more). */
  amountNanoUsd: NanoUsd;
  metadata: Record<string, string>;
}

export interface RefundResult {
  refundId: string;
  paymentIntentId: string;
  amountNanoUsd: NanoUsd;
  /** Card refunds are `succeeded` at once in Stripe's test mode and the sandbox; `pending` may follow for some methods. */
  status: 'succeeded' | 'pending' | 'failed';
}

export interface PaymentGateway {
  readonly kind: GatewayKind;
  /** Creates the workspace's customer when `customerId` is null (stripe), attaches the card and makes it the default. */
  attachPaymentMethod(req: { workspaceId: string; customerId: string | null; paymentMethodId: string }): Promise<AttachedPaymentMethod>;
  /** Throws GatewayUnavailable when the outcome is unknown: retry with the same idempotency key. */
  charge(req: ChargeRequest): Promise<ChargeResult>;
  retrieve(paymentIntentId: string): Promise<PaymentRecord>;
  cancel(paymentIntentId: string): Promise<PaymentRecord>;
  /** Throws GatewayRejected for more than the payment has left to refund; GatewayUnavailable when the outcome is unknown. */
  refund(req: RefundRequest): Promise<RefundResult>;
  /** Every payment the gateway holds for this service (reconcile). */
  listPayments(): AsyncIterable<PaymentRecord>;
  close?(): Promise<void>;
}

/** The gateway did not answer, or answered with a server error: the charge may or may not have happened. */
export class GatewayUnavailable extends Error {
  override readonly name = 'GatewayUnavailable';
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}

/** The gateway refused the request itself (unknown payment method, card refused when attached, bad request). */
export class GatewayRejected extends Error {
  override readonly name = 'GatewayRejected';
  constructor(
    readonly code: string,
    message: string,
    readonly status = 400,
  ) {
    super(message);
  }
}

export const NANO_PER_CENT = 10_000_000n;

export function toCents(amount: NanoUsd): number {
  if (amount % NANO_PER_CENT !== 0n) throw new RangeError(`${amount} nano-USD is not a whole number of cents`);
  const cents = amount / NANO_PER_CENT;
  if (cents > BigInt(Number.MAX_SAFE_INTEGER)) throw new RangeError('amount too large');
  return Number(cents);
}

export const fromCents = (cents: number): NanoUsd => BigInt(cents) * NANO_PER_CENT;

/** Metadata every tollgate PaymentIntent carries. */
export interface TollgateMetadata {
  tollgate_kind: 'deposit' | 'reload';
  workspace_id: string;
  /** depositId or reloadId */
  ledger_id: string;
  amount_nano_usd: string;
}
