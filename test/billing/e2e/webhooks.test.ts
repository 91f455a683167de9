import { randomUUID } from 'node:crypto';
import { streams } from '../../../src/platform/streams';
import { stripeWebhook } from '../../../src/billing/routes/stripe-webhook-schemas';
import { reloadQueue, RELOAD_QUEUE } from '../../../src/billing/workers/auto-reload';
import { bullPrefix } from '../../../src/platform/bullmq';
import { expectMatchesContract } from '../../support/contract';
import { startTestServer, TestServer } from '../../support/harness';
import { StripeWireServer, WebhookEvent } from '../../support/stripe-server';
import { api, attach, billing, deposit, newUser, TestUser } from './helpers';
import { eventually, until } from '../../support/wait';

/** Stripe mode: the real SDK against the local Stripe-wire server, which also sends the webhooks. */
const SECRET = 'whsec_test_tollgate';
let stripe: StripeWireServer;
let server: TestServer;

beforeAll(async () => {
  stripe = await new StripeWireServer({ holdMs: 5000 }).start();
  server = await startTestServer({
    STRIPE_SECRET_KEY: 'sk_test_tollgate',
    STRIPE_API_URL: stripe.url,
    STRIPE_WEBHOOK_SECRET: SECRET,
    STRIPE_MAX_NETWORK_RETRIES: '0',
    STRIPE_TIMEOUT_MS: '500',
  });
});
afterEach(() => {
  stripe.clearFaults();
  stripe.setWebhook(null);
});
afterAll(async () => {
  await server?.close();
  await stripe?.close();
});

const onCharge = (r: { method: string; path: string }) => r.method === 'POST' && r.path === '/v1/payment_intents';
const depositEvents = async (ws: string) =>
  (await server.services.store.readStream(streams.billing(ws))).filter((e) => e.type.startsWith('Deposit')).map((e) => e.type);

async function cardHolder(): Promise<TestUser> {
  const u = await newUser(server, 'stripe');
  const a = await attach(server, u, u.personalWs);
  expect(a.status).toBe(200);
  return u;
}

describe('stripe mode', () => {
  test('the card is attached to a customer of the workspace and made its default; a deposit is a PaymentIntent with our key', async () => {
    const u = await cardHolder();
    const b = await billing(server, u, u.personalWs);
    expect(b.body.mode).toBe('stripe');
    expect(b.body.modeNote).toBeUndefined();
    const pmId = b.body.paymentMethod.id as string;
    expect(pmId).toMatch(/^pm_/);
    expect(pmId).not.toBe('pm_card_visa');
    const customer = [...stripe.customers.values()].find((c) => (c.metadata as Record<string, string>).workspace_id === u.personalWs)!;
    expect((customer.invoice_settings as Record<string, string>).default_payment_method).toBe(pmId);

    const d = await deposit(server, u, u.personalWs, '100');
    expect(d.status).toBe(201);
    expect(d.body.mode).toBe('stripe');
    const pi = stripe.paymentIntents.get(d.body.deposit.paymentIntentId)!;
    expect(pi).toMatchObject({ amount: 10000, currency: 'usd', customer: customer.id, payment_method: pmId, status: 'succeeded' });
    expect(pi.metadata).toEqual({
      tollgate_kind: 'deposit',
      workspace_id: u.personalWs,
      ledger_id: d.body.deposit.depositId,
      amount_nano_usd: '100000000000',
    });
    expect(
      stripe.log.find(
        (r) =>
          r.path === '/v1/payment_intents' &&
          r.params.metadata &&
          (r.params.metadata as Record<string, string>).ledger_id === d.body.deposit.depositId,
      )?.idempotencyKey,
    ).toBe(`deposit-${d.body.deposit.depositId}`);
  });

  test('a deposit whose answer was lost is 202 pending, then settled by the webhook; the retried POST does not charge again', async () => {
    stripe.setWebhook({ url: `${server.url}/webhooks/stripe`, secret: SECRET });
    const u = await cardHolder();
    // The SDK retries a dropped connection once even with no retries configured: drop both.
    stripe.failNext('lost', { count: 2, match: onCharge });
    const key = randomUUID();
    const d = await deposit(server, u, u.personalWs, '100', key);
    expect(d.status).toBe(202);
    expect(d.body.deposit.status).toBe('pending');
    await stripe.webhooksSent();
    const settled = await eventually(
      () => billing(server, u, u.personalWs),
      (r) => r.body.balance === '100',
    );
    expect(settled.body).toMatchObject({ balance: '100', funded: true });
    expect(await depositEvents(u.personalWs)).toEqual(['DepositRequested', 'DepositSucceeded']);

    const again = await deposit(server, u, u.personalWs, '100', key);
    expect(again.status).toBe(201);
    expect(again.body.deposit.depositId).toBe(d.body.deposit.depositId);
    const charges = stripe.succeededCharges().filter((pi) => pi.metadata.ledger_id === d.body.deposit.depositId);
    expect(charges).toHaveLength(1);
    expect(again.body.deposit.paymentIntentId).toBe(charges[0].id);
  });

  test("without a webhook, retrying with the same Idempotency-Key settles the lost deposit from Stripe's replay", async () => {
    const u = await cardHolder();
    stripe.failNext('timeout', { match: onCharge });
    stripe.failNext('500', { match: onCharge });
    const key = randomUUID();
    expect((await deposit(server, u, u.personalWs, '120', key)).status).toBe(202);
    expect((await deposit(server, u, u.personalWs, '120', key)).status).toBe(202);
    const ok = await deposit(server, u, u.personalWs, '120', key);
    expect(ok.status).toBe(201);
    expect(ok.body.billing.balance).toBe('120');
    expect(stripe.succeededCharges().filter((pi) => pi.metadata.ledger_id === ok.body.deposit.depositId)).toHaveLength(1);
  });

  test('duplicated and reordered webhooks give one deposit per PaymentIntent', async () => {
    const users = await Promise.all([cardHolder(), cardHolder(), cardHolder()]);
    const pis: string[] = [];
    for (const u of users) {
      stripe.failNext('lost', { count: 2, match: onCharge });
      const d = await deposit(server, u, u.personalWs, '100');
      expect(d.status).toBe(202);
      const pi = [...stripe.paymentIntents.values()].find((p) => p.metadata.ledger_id === d.body.deposit.depositId)!;
      pis.push(pi.id);
    }
    // For each PaymentIntent: its succeeded event three times (one of them the very same event
    // delivered twice), a stale "payment_failed" snapshot, and "created"; then all shuffled.
    const deliveries: WebhookEvent[] = [];
    for (const id of pis) {
      const pi = stripe.paymentIntents.get(id)!;
      const succeeded = stripe.eventFor(pi, 'payment_intent.succeeded');
      deliveries.push(
        succeeded,
        succeeded,
        stripe.eventFor(pi, 'payment_intent.succeeded'),
        stripe.eventFor(pi, 'payment_intent.succeeded'),
      );
      deliveries.push(stripe.eventFor(pi, 'payment_intent.payment_failed', { ...pi, status: 'requires_payment_method' }));
      deliveries.push(stripe.eventFor(pi, 'payment_intent.created', { ...pi, status: 'requires_confirmation' }));
    }
    let seed = 7;
    const rnd = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    for (let i = deliveries.length - 1; i > 0; i--) {
      const j = Math.floor(rnd() * (i + 1));
      [deliveries[i], deliveries[j]] = [deliveries[j], deliveries[i]];
    }
    const url = `${server.url}/webhooks/stripe`;
    const statuses = await Promise.all(deliveries.map((e) => stripe.deliver(e, { url, secret: SECRET })));
    // 409 = the same event is being handled concurrently; Stripe delivers it again later.
    expect(statuses.every((s) => s === 200 || s === 409)).toBe(true);
    const again = await Promise.all(deliveries.map((e) => stripe.deliver(e, { url, secret: SECRET })));
    expect(again.every((s) => s === 200)).toBe(true);

    for (const [i, u] of users.entries()) {
      const events = await server.services.store.readStream(streams.billing(u.personalWs));
      const succeeded = events.filter((e) => e.type === 'DepositSucceeded');
      expect(succeeded).toHaveLength(1);
      expect((succeeded[0].data as { paymentIntentId: string }).paymentIntentId).toBe(pis[i]);
      expect(events.filter((e) => e.type === 'DepositFailed')).toHaveLength(0);
      expect((await billing(server, u, u.personalWs)).body.balance).toBe('100');
    }
    console.log(
      `webhooks: ${deliveries.length * 2} deliveries (${new Set(deliveries.map((e) => e.id)).size} distinct events) for ${pis.length} PaymentIntents → ${pis.length} DepositSucceeded, 0 DepositFailed`,
    );
  });

  test('a bad signature is refused with 400 and changes nothing; an unrelated event is acknowledged', async () => {
    const u = await cardHolder();
    stripe.failNext('lost', { count: 2, match: onCharge });
    const d = await deposit(server, u, u.personalWs, '100');
    const pi = [...stripe.paymentIntents.values()].find((p) => p.metadata.ledger_id === d.body.deposit.depositId)!;
    const e = stripe.eventFor(pi, 'payment_intent.succeeded');
    expect(await stripe.deliver(e, { url: `${server.url}/webhooks/stripe`, secret: 'whsec_wrong' })).toBe(400);
    const unsigned = await api(server).post('/webhooks/stripe').send(e);
    expect(unsigned.status).toBe(400);
    expect(await depositEvents(u.personalWs)).toEqual(['DepositRequested']);
    const other = await stripe.deliver(
      { ...e, id: `evt_${randomUUID()}`, type: 'customer.created' },
      { url: `${server.url}/webhooks/stripe`, secret: SECRET },
    );
    expect(other).toBe(200);
  });

  test('a signed but malformed payment_intent event is 400 with a detail and appends nothing', async () => {
    const post = (body: unknown, t?: number) => {
      const payload = JSON.stringify(body);
      return api(server)
        .post('/webhooks/stripe')
        .set('content-type', 'application/json')
        .set('stripe-signature', StripeWireServer.sign(payload, SECRET, t))
        .send(payload);
    };
    const head = await server.services.store.headPosition();
    const base = { object: 'event', type: 'payment_intent.succeeded', created: Math.floor(Date.now() / 1000) };
    const meta = { tollgate_kind: 'deposit', workspace_id: randomUUID(), ledger_id: randomUUID() };
    const numericId = await post({
      ...base,
      id: `evt_${randomUUID()}`,
      data: { object: { id: 12345, status: 'succeeded', amount: 10000, metadata: meta, created: 1 } },
    });
    expect(numericId.status).toBe(400);
    await expectMatchesContract(numericId, stripeWebhook);
    expect(numericId.body.detail).toMatch(/^Malformed payment_intent.succeeded event: data\.object\.id: /);
    const noAmount = await post({
      ...base,
      id: `evt_${randomUUID()}`,
      data: { object: { id: 'pi_unknown123', status: 'succeeded', metadata: meta, created: 1 } },
    });
    expect(noAmount.status).toBe(400);
    expect(noAmount.body.detail).toMatch(/data\.object\.amount/);
    const noObject = await post({ ...base, id: `evt_${randomUUID()}`, data: {} });
    expect(noObject.status).toBe(400);
    const numericEvent = await post({ ...base, id: 42, data: { object: { id: 'pi_x', status: 'succeeded', amount: 1, created: 1 } } });
    expect(numericEvent.status).toBe(400);
    expect(await server.services.store.headPosition()).toBe(head);
    // The refused deliveries left no "processing" claim behind.
    expect(await server.services.redis.keys(`${server.prefix}stripe-events:*`)).toEqual(
      expect.not.arrayContaining([expect.stringContaining('undefined')]),
    );
  });

  test('a signature dated outside the tolerance is refused in both directions', async () => {
    const u = await cardHolder();
    stripe.failNext('lost', { count: 2, match: onCharge });
    const d = await deposit(server, u, u.personalWs, '100');
    const pi = [...stripe.paymentIntents.values()].find((p) => p.metadata.ledger_id === d.body.deposit.depositId)!;
    const e = stripe.eventFor(pi, 'payment_intent.succeeded');
    const payload = JSON.stringify(e);
    const send = (t: number) =>
      api(server)
        .post('/webhooks/stripe')
        .set('content-type', 'application/json')
        .set('stripe-signature', StripeWireServer.sign(payload, SECRET, t))
        .send(payload);
    const now = Math.floor(Date.now() / 1000);
    const future = await send(now + 600);
    expect(future.status).toBe(400);
    expect(future.body.detail).toMatch(/timestamp is more than 300 s away/);
    expect((await send(now - 600)).status).toBe(400);
    expect(await depositEvents(u.personalWs)).toEqual(['DepositRequested']);
    const fresh = await send(now + 5);
    expect(fresh.status).toBe(200);
    expect(await expectMatchesContract(fresh, stripeWebhook)).toEqual({ received: true, result: 'settled' });
  });

  test('a declined card: 402 with the reason; a decline webhook changes nothing more', async () => {
    stripe.setWebhook({ url: `${server.url}/webhooks/stripe`, secret: SECRET });
    const u = await newUser(server, 'declined');
    await attach(server, u, u.personalWs, 'pm_card_chargeDeclinedInsufficientFunds');
    const d = await deposit(server, u, u.personalWs, '100');
    expect(d.status).toBe(402);
    expect(d.body.deposit).toMatchObject({ status: 'failed', code: 'insufficient_funds' });
    expect(d.body.detail).toMatch(/insufficient funds/);
    await stripe.webhooksSent();
    expect(await depositEvents(u.personalWs)).toEqual(['DepositRequested', 'DepositFailed']);
  });
});

test("a reload whose answer was lost is settled by the webhook; the worker's retry charges nothing more", async () => {
  stripe.setWebhook({ url: `${server.url}/webhooks/stripe`, secret: SECRET });
  const u = await cardHolder();
  expect((await deposit(server, u, u.personalWs, '100')).status).toBe(201);
  const put = await api(server)
    .put(`/v1/workspaces/${u.personalWs}/billing/auto-reload`)
    .set(u.auth)
    .send({ enabled: true, threshold: '50', amount: '50' });
  expect(put.status).toBe(200);
  stripe.failNext('lost', { count: 2, match: onCharge });
  const requestId = randomUUID();
  await server.services.store.append(
    streams.inference(requestId),
    [
      {
        id: randomUUID(),
        type: 'TokensDebited',
        data: {
          requestId,
          workspaceId: u.personalWs,
          keyId: 'k',
          config: 'service_3_pi',
          inputTokens: 1,
          outputTokens: 1,
          inputPriceNanoUsd: '2500',
          outputPriceNanoUsd: '10000',
          amountNanoUsd: '60000000000',
        },
      },
    ],
    { expectedRevision: 'no_stream' },
  );
  const done = await eventually(
    () => billing(server, u, u.personalWs),
    (r) => r.body.balance === '90',
    8000,
  );
  expect(done.body.balance).toBe('90');
  const events = await server.services.store.readStream(streams.billing(u.personalWs));
  const succeeded = events.filter((e) => e.type === 'AutoReloadSucceeded');
  expect(succeeded).toHaveLength(1);
  expect(succeeded[0].metadata.actor).toBe('stripe-webhook');
  const reloadId = (succeeded[0].data as { reloadId: string }).reloadId;
  // The worker's retry (BullMQ backoff: 1 s, 2 s, ...) finds it settled and the job is done. Wait for
  // the job itself to be gone: a fixed 1.5 s could end before the retry ran on a loaded machine.
  const jobs = reloadQueue({
    redis: await server.services.connectRedis('webhooks-test'),
    prefix: bullPrefix(server.services.config, RELOAD_QUEUE),
  });
  try {
    await until(
      async () => !(await jobs.getJobs(['waiting', 'delayed', 'active', 'prioritized'])).some((j) => j?.data.workspaceId === u.personalWs),
      30_000,
      'the reload job to finish',
    );
  } finally {
    await jobs.close();
  }
  expect(stripe.succeededCharges().filter((pi) => pi.metadata.ledger_id === reloadId)).toHaveLength(1);
  expect(
    (await server.services.store.readStream(streams.billing(u.personalWs)))
      .filter((e) => e.type.startsWith('AutoReload'))
      .map((e) => e.type),
  ).toEqual(['AutoReloadConfigured', 'AutoReloadTriggered', 'AutoReloadSucceeded']);
});

test('without STRIPE_WEBHOOK_SECRET the endpoint answers 404', async () => {
  const plain = await startTestServer();
  try {
    const res = await api(plain).post('/webhooks/stripe').send({});
    expect(res.status).toBe(404);
    await expectMatchesContract(res, stripeWebhook);
  } finally {
    await plain.close();
  }
});
