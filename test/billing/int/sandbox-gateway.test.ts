import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { usd } from '../../../src/platform/money';
import { GatewayRejected } from '../../../src/billing/payments/port';
import { SandboxGateway } from '../../../src/billing/payments/sandbox';
import { Keyspace } from '../../../src/platform/projections/keyspace';
import { cleanupPrefix, TEST_REDIS_URL, uniquePrefix, flushPrefix } from '../../support/redis';

const prefix = uniquePrefix('sandbox');
const redis = new Redis(TEST_REDIS_URL);
const dir = mkdtempSync(join(tmpdir(), 'tollgate-sandbox-'));
const file = join(dir, 'sandbox-payments.jsonl');
const gw = new SandboxGateway(redis, new Keyspace(prefix), file);
afterAll(async () => {
  redis.disconnect();
  await cleanupPrefix(TEST_REDIS_URL, prefix);
  rmSync(dir, { recursive: true, force: true });
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
    await expect(gw.attachPaymentMethod({ workspaceId: 'w', customerId: null, paymentMethodId: 'pm_123' })).rejects.toBeInstanceOf(
      GatewayRejected,
    );
  });

  test('outcomes by card; off-session authentication fails, on-session asks for action', async () => {
    expect((await gw.charge(req('a'))).status).toBe('succeeded');
    expect(await gw.charge(req('b', 'pm_card_chargeDeclined'))).toMatchObject({
      status: 'failed',
      code: 'card_declined',
      declineCode: 'generic_decline',
    });
    expect(await gw.charge(req('c', 'pm_card_chargeDeclinedInsufficientFunds'))).toMatchObject({ declineCode: 'insufficient_funds' });
    expect(await gw.charge(req('d', 'pm_card_authenticationRequired'))).toMatchObject({
      status: 'failed',
      code: 'authentication_required',
    });
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

  test('payments and idempotent answers survive a Redis that lost its data', async () => {
    const first = await gw.charge(req('survivor', 'pm_card_visa', usd(30)));
    expect(first.status).toBe('succeeded');
    const declined = await gw.charge(req('survivor-declined', 'pm_card_chargeDeclined', usd(30)));
    expect(declined.status).toBe('failed');
    await flushPrefix(TEST_REDIS_URL, prefix); // the Redis loss

    // a new process over the same DATA_DIR: reconcile still finds every payment
    const again = new SandboxGateway(redis, new Keyspace(prefix), file);
    const listed = [];
    for await (const p of again.listPayments()) listed.push(p);
    expect(listed).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          paymentIntentId: (first as { paymentIntentId: string }).paymentIntentId,
          status: 'succeeded',
          amountNanoUsd: usd(30),
        }),
        expect.objectContaining({ status: 'failed', failureCode: 'generic_decline' }),
      ]),
    );
    expect(await again.retrieve((first as { paymentIntentId: string }).paymentIntentId)).toMatchObject({ status: 'succeeded' });
    // the same idempotency key replays the first answer instead of charging again
    expect(await again.charge(req('survivor', 'pm_card_visa', usd(30)))).toEqual(first);
    await expect(again.charge(req('survivor', 'pm_card_visa', usd(31)))).rejects.toMatchObject({ code: 'idempotency_error' });
    const after = [];
    for await (const p of again.listPayments()) after.push(p);
    expect(after.length).toBe(listed.length);
  });
});

describe('sandbox refunds', () => {
  test('at most what the payment has not refunded, replayed by key, kept in the payments file', async () => {
    const paid = await gw.charge(req(`refund-src-${prefix}`));
    if (paid.status !== 'succeeded') throw new Error('the charge should succeed');
    const refund = (key: string, amount: bigint) =>
      gw.refund({ idempotencyKey: key, paymentIntentId: paid.paymentIntentId, amountNanoUsd: amount, metadata: { k: key } });
    const first = await refund('r1', usd(5));
    expect(first).toMatchObject({ paymentIntentId: paid.paymentIntentId, amountNanoUsd: usd(5), status: 'succeeded' });
    expect(await refund('r1', usd(5))).toEqual(first);
    await expect(refund('r1', usd(6))).rejects.toMatchObject({ code: 'idempotency_error' });
    await expect(refund('r2', usd(15) + 10_000_000n)).rejects.toMatchObject({ code: 'amount_too_large' });
    expect((await refund('r2', usd(15))).amountNanoUsd).toBe(usd(15));
    await expect(refund('r3', 10_000_000n)).rejects.toMatchObject({ code: 'amount_too_large' });
    // Another process (a new gateway over the same file, Redis keys gone) replays the first answer.
    const other = new SandboxGateway(redis, new Keyspace(`${prefix}-other`), file);
    expect(
      await other.refund({ idempotencyKey: 'r1', paymentIntentId: paid.paymentIntentId, amountNanoUsd: usd(5), metadata: {} }),
    ).toEqual(first);
    // The payments themselves still list (a refund's line is not a payment).
    const listed: string[] = [];
    for await (const p of gw.listPayments()) listed.push(p.paymentIntentId);
    expect(listed).toContain(paid.paymentIntentId);
  });
});
