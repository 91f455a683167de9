import { randomUUID } from 'node:crypto';
import { usd } from '../../../src/platform/money';
import { GatewayRejected, GatewayUnavailable } from '../../../src/billing/payments/port';
import { StripeGateway } from '../../../src/billing/payments/stripe';
import { StripeWireServer } from '../../support/stripe-server';

/** The stripe adapter, through the real SDK, against the local Stripe-wire server. */
let server: StripeWireServer;
const gateway = (maxNetworkRetries = 2, timeoutMs = 2000) =>
  new StripeGateway({ secretKey: 'sk_test_tollgate', apiUrl: server.url, maxNetworkRetries, timeoutMs });

beforeAll(async () => {
  server = await new StripeWireServer({ holdMs: 10_000 }).start();
});
afterEach(() => server.clearFaults());
afterAll(() => server.close());

const meta = (id: string) => ({ tollgate_kind: 'reload', workspace_id: 'ws1', ledger_id: id, amount_nano_usd: usd(20).toString() });

async function attached(pm = 'pm_card_visa') {
  const g = gateway();
  const a = await g.attachPaymentMethod({ workspaceId: randomUUID(), customerId: null, paymentMethodId: pm });
  return { g, a };
}

describe('stripe adapter through the real SDK', () => {
  it('creates a customer, attaches the card as its default and charges it once per idempotency key', async () => {
    const { g, a } = await attached();
    expect(a.customerId).toMatch(/^cus_/);
    expect(a.paymentMethodId).toMatch(/^pm_/);
    expect(a.paymentMethodId).not.toBe('pm_card_visa');
    expect(a).toMatchObject({ brand: 'visa', last4: '4242' });
    const customer = server.customers.get(a.customerId!)!;
    expect((customer.invoice_settings as { default_payment_method: string }).default_payment_method).toBe(a.paymentMethodId);

    const id = randomUUID();
    const req = {
      idempotencyKey: `reload-${id}`,
      customerId: a.customerId,
      paymentMethodId: a.paymentMethodId,
      amountNanoUsd: usd(20),
      offSession: true,
      description: 'auto-reload',
      metadata: meta(id),
    };
    const first = await g.charge(req);
    const again = await g.charge(req);
    expect(first).toMatchObject({ status: 'succeeded', amountNanoUsd: usd(20) });
    expect(again).toEqual(first);
    expect(server.succeededCharges().filter((pi) => pi.metadata.ledger_id === id)).toHaveLength(1);
    const replayed = server.log.filter((r) => r.idempotencyKey === `reload-${id}`);
    expect(replayed.map((r) => !!r.replayed)).toEqual([false, true]);

    // The same key with other parameters is refused, and charges nothing.
    await expect(g.charge({ ...req, amountNanoUsd: usd(30) })).rejects.toBeInstanceOf(GatewayRejected);
    expect(server.succeededCharges().filter((pi) => pi.metadata.ledger_id === id)).toHaveLength(1);

    const rec = await g.retrieve((first as { paymentIntentId: string }).paymentIntentId);
    expect(rec).toMatchObject({ status: 'succeeded', amountNanoUsd: usd(20), metadata: meta(id) });
  });

  it('reports declines and authentication-required cards as failed charges with the PaymentIntent', async () => {
    const { g, a } = await attached('pm_card_chargeDeclined');
    const id = randomUUID();
    const base = {
      customerId: a.customerId,
      paymentMethodId: a.paymentMethodId,
      amountNanoUsd: usd(10),
      description: 'x',
      metadata: meta(id),
    };
    const declined = await g.charge({ ...base, idempotencyKey: `k-${id}`, offSession: true });
    expect(declined).toMatchObject({ status: 'failed', code: 'card_declined', declineCode: 'generic_decline' });
    expect((declined as { paymentIntentId: string }).paymentIntentId).toMatch(/^pi_/);
    // A card error is replayed too: the same key never charges on a second try.
    expect(await g.charge({ ...base, idempotencyKey: `k-${id}`, offSession: true })).toEqual(declined);

    const auth = await attached('pm_card_authenticationRequired');
    const base2 = { ...base, customerId: auth.a.customerId, paymentMethodId: auth.a.paymentMethodId };
    expect(await auth.g.charge({ ...base2, idempotencyKey: `off-${id}`, offSession: true })).toMatchObject({
      status: 'failed',
      code: 'authentication_required',
    });
    const onSession = await auth.g.charge({ ...base2, idempotencyKey: `on-${id}`, offSession: false });
    expect(onSession.status).toBe('requires_action');
    const canceled = await auth.g.cancel((onSession as { paymentIntentId: string }).paymentIntentId);
    expect(canceled.status).toBe('canceled');
  });

  it('the wire server also speaks create-then-confirm and retrieve, as Stripe does', async () => {
    const { g, a } = await attached();
    const stripe = g.stripe;
    const pi = await stripe.paymentIntents.create({
      amount: 2500,
      currency: 'usd',
      customer: a.customerId!,
      payment_method: a.paymentMethodId,
    });
    expect(pi.status).toBe('requires_confirmation');
    const confirmed = await stripe.paymentIntents.confirm(pi.id, {}, { idempotencyKey: `confirm-${pi.id}` });
    expect(confirmed).toMatchObject({ id: pi.id, status: 'succeeded', amount_received: 2500 });
    expect((await stripe.paymentIntents.retrieve(pi.id)).status).toBe('succeeded');
    await expect(stripe.paymentIntents.confirm(pi.id)).rejects.toMatchObject({
      type: 'StripeInvalidRequestError',
      code: 'payment_intent_unexpected_state',
    });
    const declined = await attached('pm_card_chargeDeclined');
    await expect(
      stripe.paymentIntents.create({
        amount: 2500,
        currency: 'usd',
        customer: declined.a.customerId!,
        payment_method: declined.a.paymentMethodId,
        confirm: true,
      }),
    ).rejects.toMatchObject({ type: 'StripeCardError', statusCode: 402, code: 'card_declined', decline_code: 'generic_decline' });
  });

  it('an unknown payment method is refused when attached', async () => {
    await expect(gateway().attachPaymentMethod({ workspaceId: 'w', customerId: null, paymentMethodId: 'pm_nope' })).rejects.toMatchObject({
      name: 'GatewayRejected',
      code: 'resource_missing',
    });
  });

  it.each(['500', 'timeout', 'lost'] as const)('a %s fault is retried by the SDK with our key and charges once', async (fault) => {
    const { a } = await attached();
    const g = gateway(2, 500);
    const id = randomUUID();
    server.failNext(fault, { match: (r) => r.path === '/v1/payment_intents' });
    const res = await g.charge({
      idempotencyKey: `reload-${id}`,
      customerId: a.customerId,
      paymentMethodId: a.paymentMethodId,
      amountNanoUsd: usd(15),
      offSession: true,
      description: 'auto-reload',
      metadata: meta(id),
    });
    expect(res.status).toBe('succeeded');
    expect(server.succeededCharges().filter((pi) => pi.metadata.ledger_id === id)).toHaveLength(1);
    const calls = server.log.filter((r) => r.idempotencyKey === `reload-${id}`);
    expect(calls.length).toBe(2);
    expect(calls[0].fault).toBe(fault);
    expect(calls[1].replayed ?? false).toBe(fault === 'lost');
  });

  it('with no retries left the outcome is unknown (GatewayUnavailable), and a later retry with the key settles it', async () => {
    const { a } = await attached();
    const g = gateway(0, 500);
    const id = randomUUID();
    // A dropped connection is retried once by the SDK even with maxNetworkRetries 0.
    server.failNext('lost', { count: 2, match: (r) => r.path === '/v1/payment_intents' });
    const req = {
      idempotencyKey: `reload-${id}`,
      customerId: a.customerId,
      paymentMethodId: a.paymentMethodId,
      amountNanoUsd: usd(15),
      offSession: true,
      description: 'auto-reload',
      metadata: meta(id),
    };
    await expect(g.charge(req)).rejects.toBeInstanceOf(GatewayUnavailable);
    expect(server.succeededCharges().filter((pi) => pi.metadata.ledger_id === id)).toHaveLength(1);
    const settled = await g.charge(req);
    expect(settled.status).toBe('succeeded');
    expect(server.succeededCharges().filter((pi) => pi.metadata.ledger_id === id)).toHaveLength(1);
  });

  it('lists the payments it holds, across pages', async () => {
    const { g, a } = await attached();
    for (let i = 0; i < 3; i++) {
      const id = randomUUID();
      await g.charge({
        idempotencyKey: `reload-${id}`,
        customerId: a.customerId,
        paymentMethodId: a.paymentMethodId,
        amountNanoUsd: usd(11),
        offSession: true,
        description: 'x',
        metadata: meta(id),
      });
    }
    const seen: string[] = [];
    const paged = new StripeGateway({
      secretKey: 'sk_test_tollgate',
      apiUrl: server.url,
      maxNetworkRetries: 0,
      timeoutMs: 2000,
      listPageSize: 2,
    });
    for await (const p of paged.listPayments()) seen.push(p.paymentIntentId);
    expect(server.log.filter((r) => r.method === 'GET' && r.path === '/v1/payment_intents').length).toBeGreaterThan(1);
    expect(new Set(seen).size).toBe(seen.length);
    expect(seen.length).toBe([...server.paymentIntents.values()].filter((pi) => pi.metadata.tollgate_kind).length);
  });
});

describe('stripe refunds through the real SDK', () => {
  it('refunds at most what the payment has left, once per idempotency key', async () => {
    const { g, a } = await attached();
    const id = randomUUID();
    const paid = await g.charge({
      idempotencyKey: `deposit-${id}`,
      customerId: a.customerId,
      paymentMethodId: a.paymentMethodId,
      amountNanoUsd: usd(20),
      offSession: false,
      description: 'deposit',
      metadata: meta(id),
    });
    if (paid.status !== 'succeeded') throw new Error('the charge should succeed');
    const refund = (key: string, amount: bigint) =>
      g.refund({ idempotencyKey: key, paymentIntentId: paid.paymentIntentId, amountNanoUsd: amount, metadata: { ledger_id: key } });
    const first = await refund(`refund-${id}-1`, usd(5));
    expect(first).toMatchObject({ refundId: expect.stringMatching(/^re_/), amountNanoUsd: usd(5), status: 'succeeded' });
    expect(await refund(`refund-${id}-1`, usd(5))).toEqual(first);
    const mine = () => [...server.refunds.values()].filter((r) => r.payment_intent === paid.paymentIntentId);
    expect(mine()).toHaveLength(1);
    await expect(refund(`refund-${id}-2`, usd(16))).rejects.toMatchObject({ code: 'amount_too_large' });
    expect((await refund(`refund-${id}-3`, usd(15))).amountNanoUsd).toBe(usd(15));
    await expect(refund(`refund-${id}-4`, usd(1))).rejects.toBeInstanceOf(GatewayRejected);
    expect(mine().map((r) => r.amount)).toEqual([500, 1500]);
  });
});
