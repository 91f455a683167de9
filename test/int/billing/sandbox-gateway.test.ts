import { Redis } from 'ioredis';
import { usd } from '../../../src/domain/money';
import { GatewayRejected } from '../../../src/payments/port';
import { SandboxGateway } from '../../../src/payments/sandbox';
import { Keyspace } from '../../../src/projections/keyspace';
import { cleanupPrefix, TEST_REDIS_URL, uniquePrefix } from '../../support/redis';

const prefix = uniquePrefix('sandbox');
const redis = new Redis(TEST_REDIS_URL);
const gw = new SandboxGateway(redis, new Keyspace(prefix));
afterAll(async () => {
  redis.disconnect();
  await cleanupPrefix(TEST_REDIS_URL, prefix);
});

const req = (key: string, pm = 'pm_card_visa', amount = usd(20), offSession = true) => ({
  idempotencyKey: key,
  customerId: null,
  paymentMethodId: pm,
  amountNanoUsd: amount,
  offSession,
  description: 'x',
  metadata: { tollgate_kind: 'reload', workspace_id: 'w', ledger_id: key, amount_nano_usd: amount.toString() },
});

describe('sandbox gateway (no network; Stripe test payment-method ids)', () => {
  test('attaches only known test ids', async () => {
    expect(await gw.attachPaymentMethod({ workspaceId: 'w', customerId: null, paymentMethodId: 'pm_card_mastercard' })).toEqual({
      paymentMethodId: 'pm_card_mastercard',
      brand: 'mastercard',
      last4: '4444',
      customerId: null,
    });
    await expect(gw.attachPaymentMethod({ workspaceId: 'w', customerId: null, paymentMethodId: 'pm_123' })).rejects.toBeInstanceOf(GatewayRejected);
  });

  test('outcomes by card; off-session authentication fails, on-session asks for action', async () => {
    expect((await gw.charge(req('a'))).status).toBe('succeeded');
    expect(await gw.charge(req('b', 'pm_card_chargeDeclined'))).toMatchObject({ status: 'failed', code: 'card_declined', declineCode: 'generic_decline' });
    expect(await gw.charge(req('c', 'pm_card_chargeDeclinedInsufficientFunds'))).toMatchObject({ declineCode: 'insufficient_funds' });
    expect(await gw.charge(req('d', 'pm_card_authenticationRequired'))).toMatchObject({ status: 'failed', code: 'authentication_required' });
    const onSession = await gw.charge(req('e', 'pm_card_authenticationRequired', usd(20), false));
    expect(onSession.status).toBe('requires_action');
    expect((await gw.cancel(onSession.paymentIntentId!)).status).toBe('canceled');
  });

  test('an idempotency key replays its first answer, even under concurrency, and refuses other parameters', async () => {
    const results = await Promise.all(Array.from({ length: 20 }, () => gw.charge(req('same'))));
    expect(new Set(results.map((r) => JSON.stringify(r, (_k, v) => (typeof v === 'bigint' ? v.toString() : v)))).size).toBe(1);
    await expect(gw.charge(req('same', 'pm_card_visa', usd(21)))).rejects.toMatchObject({ code: 'idempotency_error' });
    const all = [];
    for await (const p of gw.listPayments()) all.push(p);
    expect(all.filter((p) => p.metadata.ledger_id === 'same')).toHaveLength(1);
    expect(all.find((p) => p.metadata.ledger_id === 'same')).toMatchObject({ status: 'succeeded', amountNanoUsd: usd(20) });
  });

  test('refuses a charge that is not whole cents', async () => {
    await expect(gw.charge(req('f', 'pm_card_visa', usd(1) + 1n))).rejects.toThrow(/cents/);
  });
});
