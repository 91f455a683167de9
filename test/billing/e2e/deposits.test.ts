import { randomUUID } from 'node:crypto';
import { startTestServer, TestServer } from '../../support/harness';
import { api, attach, billing, deposit, newUser } from './helpers';
import { expectMatchesContract } from '../../support/contract';
import { attachPaymentMethod, makeDeposit, showBilling } from '../../../src/billing/routes/billing-schemas';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server?.close());

describe('billing in sandbox mode (no STRIPE_SECRET_KEY)', () => {
  test('a new workspace: balance 0, not funded, mode sandbox', async () => {
    const u = await newUser(server);
    const res = await billing(server, u, u.personalWs);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      workspaceId: u.personalWs,
      mode: 'sandbox',
      balance: '0',
      available: '0',
      funded: false,
      minimumDeposit: '100',
      paymentMethod: null,
      autoReload: null,
    });
    expect(res.body.modeNote).toMatch(/Sandbox/);
    await expectMatchesContract(res, showBilling);
  });

  test('card, then the initial deposit of 100 USD: funded; a retried POST with the same key charges once', async () => {
    const u = await newUser(server);
    expect((await deposit(server, u, u.personalWs, '100')).status).toBe(409); // no card yet
    const a = await attach(server, u, u.personalWs);
    expect(a.status).toBe(200);
    expect(a.body).toEqual({ paymentMethod: { id: 'pm_card_visa', brand: 'visa', last4: '4242' }, mode: 'sandbox' });
    await expectMatchesContract(a, attachPaymentMethod);

    const small = await deposit(server, u, u.personalWs, '99.99');
    expect(small.status).toBe(422);
    expect(small.body.detail).toEqual([
      { loc: ['body', 'amount'], msg: 'The first deposit must be at least 100 USD', type: 'value_error' },
    ]);

    const key = randomUUID();
    const first = await deposit(server, u, u.personalWs, '100', key);
    expect(first.status).toBe(201);
    expect(first.body.deposit).toMatchObject({ status: 'succeeded', amount: '100', paymentIntentId: expect.stringMatching(/^pi_sbx_/) });
    expect(first.body.billing).toMatchObject({ balance: '100', funded: true, minimumDeposit: '10' });
    await expectMatchesContract(first, makeDeposit);

    const again = await deposit(server, u, u.personalWs, '100', key);
    expect(again.status).toBe(201);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.body.deposit).toEqual(first.body.deposit);
    expect((await billing(server, u, u.personalWs)).body.balance).toBe('100');

    const otherAmount = await deposit(server, u, u.personalWs, '150', key);
    expect(otherAmount.status).toBe(409);

    expect((await deposit(server, u, u.personalWs, '9.99')).status).toBe(422);
    const huge = await deposit(server, u, u.personalWs, '1000000');
    expect(huge.status).toBe(422);
    expect(huge.body.detail).toEqual([{ loc: ['body', 'amount'], msg: 'amount must be at most 999999.99 USD', type: 'value_error' }]);
    const later = await deposit(server, u, u.personalWs, '10.50');
    expect(later.status).toBe(201);
    expect(later.body.billing.balance).toBe('110.5');
  });

  test('declined and authentication-required cards: 402, DepositFailed, no money', async () => {
    const u = await newUser(server);
    await attach(server, u, u.personalWs, 'pm_card_chargeDeclined');
    const d = await deposit(server, u, u.personalWs, '100');
    expect(d.status).toBe(402);
    expect(d.body.deposit).toMatchObject({ status: 'failed', code: 'generic_decline' });
    await expectMatchesContract(d, makeDeposit);
    await attach(server, u, u.personalWs, 'pm_card_authenticationRequired');
    const a = await deposit(server, u, u.personalWs, '100');
    expect(a.status).toBe(402);
    expect(a.body.deposit).toMatchObject({ status: 'failed', code: 'authentication_required' });
    expect((await billing(server, u, u.personalWs)).body).toMatchObject({ balance: '0', funded: false });
  });

  test('validation: amounts are decimal strings of whole cents; the Idempotency-Key header is required', async () => {
    const u = await newUser(server);
    await attach(server, u, u.personalWs);
    const noKey = await api(server).post(`/v1/workspaces/${u.personalWs}/billing/deposits`).set(u.auth).send({ amount: '100' });
    expect(noKey.status).toBe(422);
    expect(noKey.body.detail).toEqual([
      {
        loc: ['header', 'Idempotency-Key'],
        msg: 'An Idempotency-Key header (1 to 255 visible characters, e.g. a uuid) is required: a retry with the same key never charges twice',
        type: 'missing',
      },
    ]);
    const float = await deposit(server, u, u.personalWs, 100 as unknown as string);
    expect(float.status).toBe(422);
    expect(float.body.detail[0].loc).toEqual(['body', 'amount']);
    const subCent = await deposit(server, u, u.personalWs, '100.001');
    expect(subCent.status).toBe(422);
    const unknownPm = await attach(server, u, u.personalWs, 'pm_nope');
    expect(unknownPm.status).toBe(422);
    expect(unknownPm.body.detail[0].loc).toEqual(['body', 'paymentMethodId']);
  });
});
