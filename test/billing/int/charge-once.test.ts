import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { usd } from '../../../src/platform/money';
import { createLogger } from '../../../src/platform/log';
import type { ChargeRequest } from '../../../src/billing/payments/port';
import { SandboxGateway } from '../../../src/billing/payments/sandbox';
import { chargeOnce } from '../../../src/billing/usecases/charge-once';
import { Keyspace } from '../../../src/platform/projections/keyspace';
import { cleanupPrefix, TEST_REDIS_URL, uniquePrefix } from '../../support/redis';

// The one mapping from a gateway charge to a ledger outcome, which deposits and auto-reloads share.
const prefix = uniquePrefix('charge-once');
const redis = new Redis(TEST_REDIS_URL);
const dir = mkdtempSync(join(tmpdir(), 'tollgate-charge-once-'));
const gateway = new SandboxGateway(redis, new Keyspace(prefix), join(dir, 'payments.jsonl'));
const d = { gateway, log: createLogger('silent') };
afterAll(async () => {
  redis.disconnect();
  await cleanupPrefix(TEST_REDIS_URL, prefix);
  rmSync(dir, { recursive: true, force: true });
});

const req = (key: string, pm: string, offSession: boolean): ChargeRequest => ({
  idempotencyKey: key,
  customerId: null,
  paymentMethodId: pm,
  amountNanoUsd: usd(20),
  offSession,
  description: 'x',
  metadata: { tollgate_kind: 'deposit', workspace_id: 'w', ledger_id: key, amount_nano_usd: usd(20).toString() },
});

describe('chargeOnce', () => {
  test('a charge that goes through succeeded, with its PaymentIntent', async () => {
    const out = await chargeOnce(d, 'deposit', req('ok', 'pm_card_visa', false));
    expect(out).toMatchObject({ status: 'succeeded', paymentIntentId: expect.stringMatching(/^pi_/) });
  });

  test('a decline failed, with the decline code rather than the generic code', async () => {
    expect(await chargeOnce(d, 'reload', req('no', 'pm_card_chargeDeclinedInsufficientFunds', true))).toMatchObject({
      status: 'failed',
      code: 'insufficient_funds',
    });
  });

  test('3-D Secure: the PaymentIntent is cancelled, and the reason is the one each ledger entry has always carried', async () => {
    const deposit = await chargeOnce(d, 'deposit', req('3ds-d', 'pm_card_authenticationRequired', false));
    expect(deposit).toEqual({
      status: 'failed',
      paymentIntentId: expect.any(String),
      code: 'authentication_required',
      reason: 'The card requires authentication (3-D Secure), which tollgate cannot complete; use another card',
    });
    expect((await gateway.retrieve(deposit.paymentIntentId!)).status).toBe('canceled');
    const reload = await chargeOnce(d, 'reload', req('3ds-r', 'pm_card_authenticationRequired', false));
    expect(reload).toMatchObject({
      code: 'authentication_required',
      reason: 'The card needs authentication, which an automatic charge cannot do',
    });
    expect((await gateway.retrieve(reload.paymentIntentId!)).status).toBe('canceled');
  });

  test('a reused idempotency key with other parameters is thrown, not recorded as a failure', async () => {
    await chargeOnce(d, 'deposit', req('twice', 'pm_card_visa', false));
    await expect(chargeOnce(d, 'deposit', { ...req('twice', 'pm_card_visa', false), amountNanoUsd: usd(21) })).rejects.toMatchObject({
      code: 'idempotency_error',
    });
  });
});
