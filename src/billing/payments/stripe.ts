import Stripe from 'stripe';
import { idempotencyKeys } from '../ids';
import {
  AttachedPaymentMethod,
  ChargeRequest,
  ChargeResult,
  fromCents,
  GatewayRejected,
  GatewayUnavailable,
  PaymentGateway,
  PaymentRecord,
  PaymentStatus,
  RefundRequest,
  RefundResult,
  toCents,
} from './port';

export interface StripeGatewayOptions {
  secretKey: string;
  /** e.g. http://127.0.0.1:12111 for the local Stripe-wire server; unset = api.stripe.com. */
  apiUrl?: string;
  /** Set explicitly: the SDK's default has differed between its README and its source. */
  maxNetworkRetries: number;
  timeoutMs: number;
  /** Page size when listing PaymentIntents (reconcile). */
  listPageSize?: number;
}

type StripeClient = InstanceType<typeof Stripe>;

/**
 * The real Stripe SDK. A customer per workspace (created with the idempotency key
 * `customer-{workspaceId}`); the card is attached and made the customer's default; deposits are
 * on-session PaymentIntents and auto-reloads off-session ones, created and confirmed in one call
 * with our own idempotency key, so the SDK's retries and ours land on the same PaymentIntent.
 */
export class StripeGateway implements PaymentGateway {
  readonly kind = 'stripe' as const;
  readonly stripe: StripeClient;
  private readonly pageSize: number;

  constructor(opts: StripeGatewayOptions) {
    this.pageSize = opts.listPageSize ?? 100;
    const config: ConstructorParameters<typeof Stripe>[1] = {
      maxNetworkRetries: opts.maxNetworkRetries,
      timeout: opts.timeoutMs,
      telemetry: false,
      appInfo: { name: 'tollgate' },
    };
    if (opts.apiUrl) {
      const u = new URL(opts.apiUrl);
      config.host = u.hostname;
      config.port = u.port || (u.protocol === 'https:' ? 443 : 80);
      config.protocol = u.protocol === 'https:' ? 'https' : 'http';
    }
    this.stripe = new Stripe(opts.secretKey, config);
  }

  async attachPaymentMethod(req: {
    workspaceId: string;
    customerId: string | null;
    paymentMethodId: string;
  }): Promise<AttachedPaymentMethod> {
    return call(async () => {
      let customerId = req.customerId;
      if (!customerId) {
        const c = await this.stripe.customers.create(
          { description: `tollgate workspace ${req.workspaceId}`, metadata: { workspace_id: req.workspaceId } },
          { idempotencyKey: idempotencyKeys.customer(req.workspaceId) },
        );
        customerId = c.id;
      }
      const pm = await this.stripe.paymentMethods.attach(
        req.paymentMethodId,
        { customer: customerId },
        { idempotencyKey: idempotencyKeys.attach(req.workspaceId, req.paymentMethodId) },
      );
      await this.stripe.customers.update(customerId, { invoice_settings: { default_payment_method: pm.id } });
      return {
        paymentMethodId: pm.id,
        brand: pm.card?.brand ?? pm.type,
        last4: pm.card?.last4 ?? '',
        customerId,
      };
    });
  }

  async charge(req: ChargeRequest): Promise<ChargeResult> {
    const params: Stripe.PaymentIntentCreateParams = {
      amount: toCents(req.amountNanoUsd),
      currency: 'usd',
      payment_method: req.paymentMethodId,
      automatic_payment_methods: { enabled: true, allow_redirects: 'never' },
      confirm: true,
      description: req.description,
      metadata: req.metadata,
    };
    if (req.customerId) params.customer = req.customerId;
    if (req.offSession) params.off_session = true;
    try {
      const pi = await this.stripe.paymentIntents.create(params, { idempotencyKey: req.idempotencyKey });
      return fromIntent(pi);
    } catch (err) {
      if (err instanceof Stripe.errors.StripeCardError) {
        const raw = err.raw as { payment_intent?: { id?: string } };
        return {
          status: 'failed',
          paymentIntentId: raw?.payment_intent?.id ?? null,
          code: err.code ?? 'card_error',
          declineCode: err.decline_code ?? null,
          reason: err.message,
        };
      }
      throw mapError(err);
    }
  }

  retrieve(paymentIntentId: string): Promise<PaymentRecord> {
    return call(async () => toRecord(await this.stripe.paymentIntents.retrieve(paymentIntentId)));
  }

  cancel(paymentIntentId: string): Promise<PaymentRecord> {
    return call(async () => toRecord(await this.stripe.paymentIntents.cancel(paymentIntentId)));
  }

  refund(req: RefundRequest): Promise<RefundResult> {
    return call(async () => {
      const r = await this.stripe.refunds.create(
        { payment_intent: req.paymentIntentId, amount: toCents(req.amountNanoUsd), metadata: req.metadata },
        { idempotencyKey: req.idempotencyKey },
      );
      const status = r.status === 'succeeded' ? 'succeeded' : r.status === 'failed' || r.status === 'canceled' ? 'failed' : 'pending';
      return { refundId: r.id, paymentIntentId: req.paymentIntentId, amountNanoUsd: fromCents(r.amount), status };
    });
  }

  async *listPayments(): AsyncIterable<PaymentRecord> {
    try {
      for await (const pi of this.stripe.paymentIntents.list({ limit: this.pageSize })) {
        if (pi.metadata?.tollgate_kind) yield toRecord(pi);
      }
    } catch (err) {
      throw mapError(err);
    }
  }

  /** Verifies a webhook's Stripe-Signature over the raw body and returns the event. */
  static verifyWebhook(rawBody: Buffer | string, signature: string, secret: string, toleranceSeconds = 300): Stripe.Event {
    return Stripe.webhooks.constructEvent(rawBody, signature, secret, toleranceSeconds);
  }
}

function fromIntent(pi: Stripe.PaymentIntent): ChargeResult {
  switch (pi.status) {
    case 'succeeded':
      return { status: 'succeeded', paymentIntentId: pi.id, amountNanoUsd: fromCents(pi.amount_received || pi.amount) };
    case 'requires_action':
    case 'requires_confirmation':
      return { status: 'requires_action', paymentIntentId: pi.id };
    case 'requires_payment_method':
    case 'canceled': {
      const e = pi.last_payment_error;
      return {
        status: 'failed',
        paymentIntentId: pi.id,
        code: e?.code ?? pi.status,
        declineCode: e?.decline_code ?? null,
        reason: e?.message ?? `The PaymentIntent ended ${pi.status}`,
      };
    }
    default:
      // processing, requires_capture: not final for a card charged in one step; ask again later.
      throw new GatewayUnavailable(`PaymentIntent ${pi.id} is ${pi.status}; its outcome is not known yet`);
  }
}

export function paymentStatusOf(pi: Pick<Stripe.PaymentIntent, 'status'>): PaymentStatus {
  switch (pi.status) {
    case 'succeeded':
      return 'succeeded';
    case 'canceled':
      return 'canceled';
    case 'requires_payment_method':
      return 'failed';
    default:
      return 'pending';
  }
}

function toRecord(pi: Stripe.PaymentIntent): PaymentRecord {
  return {
    paymentIntentId: pi.id,
    status: paymentStatusOf(pi),
    amountNanoUsd: fromCents(pi.status === 'succeeded' ? pi.amount_received || pi.amount : pi.amount),
    metadata: { ...(pi.metadata ?? {}) },
    created: new Date(pi.created * 1000).toISOString(),
    failureCode: pi.last_payment_error ? (pi.last_payment_error.decline_code ?? pi.last_payment_error.code ?? null) : null,
    failureMessage: pi.last_payment_error?.message ?? null,
  };
}

async function call<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    throw mapError(err);
  }
}

/** Unknown outcomes (network, 5xx, 429, auth on our side) → GatewayUnavailable; refusals → GatewayRejected. */
function mapError(err: unknown): Error {
  if (err instanceof GatewayUnavailable || err instanceof GatewayRejected) return err;
  const E = Stripe.errors;
  if (err instanceof E.StripeCardError) {
    return new GatewayRejected(err.decline_code ?? err.code ?? 'card_declined', err.message, 402);
  }
  if (err instanceof E.StripeIdempotencyError) {
    // Another request with this key is still running at Stripe: its outcome is not known yet.
    if (err.code === 'idempotency_key_in_use' || err.statusCode === 409)
      return new GatewayUnavailable(`Stripe: ${err.message}`, { cause: err });
    return new GatewayRejected('idempotency_error', err.message, 409);
  }
  if (err instanceof E.StripeInvalidRequestError) {
    return new GatewayRejected(err.code ?? 'invalid_request', err.message, err.statusCode ?? 400);
  }
  if (
    err instanceof E.StripeConnectionError ||
    err instanceof E.StripeAPIError ||
    err instanceof E.StripeRateLimitError ||
    err instanceof E.StripeAuthenticationError ||
    err instanceof E.StripePermissionError
  ) {
    return new GatewayUnavailable(`Stripe: ${err.message}`, { cause: err });
  }
  if (err instanceof E.StripeError) return new GatewayUnavailable(`Stripe: ${err.message}`, { cause: err });
  return new GatewayUnavailable(`Stripe call failed: ${(err as Error)?.message ?? String(err)}`, { cause: err });
}
