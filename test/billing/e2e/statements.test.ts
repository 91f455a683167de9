import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { startTestServer, TestServer } from '../../support/harness';
import { api, newUser, TestUser } from './helpers';
import { attach, deposit } from './helpers';
import { debitData } from '../../support/debit';
import { expectMatchesContract } from '../../support/contract';
import { SqliteEventStore } from '../../../src/platform/eventstore/sqlite';
import { streams } from '../../../src/platform/streams';
import { usd } from '../../../src/platform/money';
import { formatUsd, parseUsd } from '../../../src/platform/money';
import { moneyLines } from '../../../src/cli/ledger/statement';
import { showReceipt, showStatement, listStatements } from '../../../src/billing/routes/statement-schemas';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server?.close());

const get = (u: TestUser, path: string) => api(server).get(path).set(u.auth);

/**
 * A workspace whose history began months ago: its events are appended to the server's own SQLite
 * file through a second store whose clock is set to each event's time, as if they had been written
 * then. The server's projector reads them as it reads any other process's appends.
 */
async function pastWorkspace(admin: TestUser): Promise<{ ws: string; keyA: string; keyB: string }> {
  let clock = new Date('2026-08-15T10:00:00Z');
  const store = new SqliteEventStore({ file: join(server.dataDir, 'events.sqlite'), now: () => clock });
  const ws = `ws_${randomUUID()}`;
  const keyA = randomUUID();
  const keyB = randomUUID();
  const at = async (iso: string, stream: string, type: string, data: Record<string, unknown>) => {
    clock = new Date(iso);
    return store.append(stream, [{ id: randomUUID(), type, data }], { expectedRevision: 'any' });
  };
  const debit = (iso: string, keyId: string, config: string, inputTokens: number, outputTokens: number) => {
    const d = debitData(ws, { keyId, config, inputTokens, outputTokens });
    return at(iso, streams.inference(d.requestId), 'TokensDebited', d);
  };
  try {
    await at('2026-08-15T10:00:00Z', streams.workspace(ws), 'WorkspaceCreated', {
      workspaceId: ws,
      name: 'Finance Co',
      personal: false,
      createdBy: admin.userId,
    });
    await at('2026-08-15T10:00:01Z', streams.workspace(ws), 'MemberJoined', { workspaceId: ws, userId: admin.userId, role: 'admin' });
    await at('2026-08-15T10:01:00Z', streams.billing(ws), 'PaymentMethodAttached', {
      workspaceId: ws,
      paymentMethodId: 'pm_card_visa',
      brand: 'visa',
      last4: '4242',
      customerId: null,
      gateway: 'sandbox',
    });
    await at('2026-08-16T09:00:00Z', streams.billing(ws), 'DepositSucceeded', {
      workspaceId: ws,
      depositId: 'dep-aug',
      amountNanoUsd: usd(100).toString(),
      paymentIntentId: 'pi_aug',
      by: admin.userId,
    });
    await debit('2026-08-20T12:00:00Z', keyA, 'service_3_pi', 1000, 100); // 0.0035
    await debit('2026-08-31T23:59:59.999Z', keyA, 'service_3_pi', 10, 10); // 0.000125, the last instant of August
    await at('2026-09-01T00:00:00Z', streams.billing(ws), 'DepositSucceeded', {
      workspaceId: ws,
      depositId: 'dep-sep',
      amountNanoUsd: usd(50).toString(),
      paymentIntentId: 'pi_sep',
      by: admin.userId,
    });
    await debit('2026-09-02T08:00:00Z', keyA, 'service_3_productivity', 100, 1000); // 0.01025
    await debit('2026-09-03T08:00:00Z', keyB, 'service_3_pi', 4, 0); // 0.00001
    const last = await debit('2026-09-03T09:00:00Z', keyB, 'service_3_pi', 4, 2); // 0.00003
    await server.services.progress.waitFor(last.position, 15_000);
  } finally {
    await store.close();
  }
  return { ws, keyA, keyB };
}

describe('monthly statements', () => {
  test('opening + credits − debits = closing each month, each closing is the next opening, and both equal a ledger replay', async () => {
    const admin = await newUser(server, 'finance');
    const { ws, keyA, keyB } = await pastWorkspace(admin);

    const months = await get(admin, `/v1/workspaces/${ws}/statements`);
    expect(months.status).toBe(200);
    await expectMatchesContract(months, listStatements);
    expect(months.body.months.at(-1)).toEqual({
      month: '2026-08',
      periodStart: '2026-08-01T00:00:00.000Z',
      periodEnd: '2026-09-01T00:00:00.000Z',
      complete: true,
    });

    const aug = await get(admin, `/v1/workspaces/${ws}/statements/2026-08`);
    expect(aug.status).toBe(200);
    await expectMatchesContract(aug, showStatement);
    expect(aug.body).toMatchObject({
      workspaceName: 'Finance Co',
      openingBalance: '0',
      credits: [{ at: '2026-08-16T09:00:00.000Z', kind: 'deposit', reference: 'dep-aug', paymentReference: 'pi_aug', amount: '100' }],
      usage: [{ keyId: keyA, config: 'service_3_pi', requests: 2, inputTokens: 1010, outputTokens: 110, cost: '0.003625' }],
      totals: { deposits: '100', reloads: '0', credits: '100', debits: '0.003625' },
      closingBalance: '99.996375',
      complete: true,
    });
    const sep = await get(admin, `/v1/workspaces/${ws}/statements/2026-09`);
    expect(sep.body.openingBalance).toBe(aug.body.closingBalance);
    expect(sep.body.credits.map((c: { paymentReference: string }) => c.paymentReference)).toEqual(['pi_sep']);
    expect(sep.body.usage.map((u: { keyId: string; config: string; cost: string }) => [u.keyId, u.config, u.cost])).toEqual(
      [
        [keyA, 'service_3_productivity', '0.01025'],
        [keyB, 'service_3_pi', '0.00004'],
      ].sort((a, b) => a[0].localeCompare(b[0])),
    );
    const oct = await get(admin, `/v1/workspaces/${ws}/statements/2026-10`);
    expect(oct.body).toMatchObject({
      openingBalance: sep.body.closingBalance,
      credits: [],
      usage: [],
      closingBalance: sep.body.closingBalance,
    });

    // Every month balances, and its closing equals the balance a replay of the event store reaches at its end.
    const { lines } = await moneyLines(server.services.store, { workspaceId: ws });
    for (const m of months.body.months as Array<{ month: string; periodEnd: string }>) {
      const st = (await get(admin, `/v1/workspaces/${ws}/statements/${m.month}`)).body;
      const p = parseUsd;
      expect(p(st.openingBalance) + p(st.totals.credits) - p(st.totals.debits)).toBe(p(st.closingBalance));
      const replayed = lines.filter((l) => l.at < m.periodEnd).reduce((n, l) => n + l.amount, 0n);
      expect({ month: m.month, closing: st.closingBalance }).toEqual({ month: m.month, closing: formatUsd(replayed) });
    }

    // CSV and PDF of the same statement.
    const csv = await get(admin, `/v1/workspaces/${ws}/statements/2026-08?format=csv`);
    expect(csv.status).toBe(200);
    expect(csv.headers['content-disposition']).toBe(`attachment; filename="tollgate-statement-${ws}-2026-08.csv"`);
    await expectMatchesContract(csv, showStatement);
    const rows = csv.text
      .trimEnd()
      .split('\r\n')
      .map((l) => l.split(','));
    expect(rows[0]).toEqual([
      'section',
      'time',
      'reference',
      'payment_reference',
      'key_id',
      'config',
      'requests',
      'input_tokens',
      'output_tokens',
      'amount_usd',
    ]);
    expect(rows.map((r) => r[0])).toEqual([
      'section',
      'opening_balance',
      'deposit',
      'usage',
      'total_credits',
      'total_debits',
      'closing_balance',
    ]);
    // The CSV balances on its own: opening + every credit and usage line = closing.
    const body = rows.filter((r) => ['opening_balance', 'deposit', 'reload', 'usage'].includes(r[0]));
    expect(formatUsd(body.reduce((n, r) => n + parseUsd(r[9].replace(/^-/, '')) * (r[9].startsWith('-') ? -1n : 1n), 0n))).toBe(
      rows.at(-1)![9],
    );
    const pdf = await api(server)
      .get(`/v1/workspaces/${ws}/statements/2026-08?format=pdf`)
      .set(admin.auth)
      .buffer(true)
      .parse((res, cb) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => cb(null, Buffer.concat(chunks)));
      });
    expect(pdf.status).toBe(200);
    expect(pdf.headers['content-type']).toBe('application/pdf');
    expect((pdf.body as Buffer).subarray(0, 5).toString()).toBe('%PDF-');
    expect((pdf.body as Buffer).length).toBeGreaterThan(1000);
  });

  test('a month in the future, before the workspace existed, or not a month: a clear 422 naming path.month', async () => {
    const admin = await newUser(server, 'financebad');
    const { ws } = await pastWorkspace(admin);
    const now = new Date();
    const next = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1)).toISOString().slice(0, 7);
    for (const [month, msg] of [
      [next, /has not begun/],
      ['2026-07', /The workspace was created in 2026-08: there is no statement before it/],
      ['2026-13', /YYYY-MM/],
      ['august', /YYYY-MM/],
    ] as const) {
      const res = await get(admin, `/v1/workspaces/${ws}/statements/${month}`);
      expect({ month, status: res.status }).toEqual({ month, status: 422 });
      expect(res.body.detail[0].loc).toEqual(['path', 'month']);
      expect(res.body.detail[0].msg).toMatch(msg);
    }
    expect((await get(admin, `/v1/workspaces/${ws}/statements/2026-08?format=xls`)).status).toBe(422);
    const outsider = await newUser(server, 'outsider');
    expect((await get(outsider, `/v1/workspaces/${ws}/statements/2026-08`)).status).toBe(404);
  });
});

describe('deposit receipts', () => {
  test('a succeeded deposit has a receipt as JSON and PDF; a failed or unknown one is 404', async () => {
    const u = await newUser(server, 'receipt');
    await attach(server, u, u.personalWs);
    const d = await deposit(server, u, u.personalWs, '120.50');
    expect(d.status).toBe(201);
    const id = d.body.deposit.depositId as string;
    const r = await get(u, `/v1/workspaces/${u.personalWs}/billing/deposits/${id}/receipt`);
    expect(r.status).toBe(200);
    await expectMatchesContract(r, showReceipt);
    expect(r.body).toMatchObject({
      receiptNumber: id,
      amount: '120.5',
      currency: 'USD',
      paymentReference: d.body.deposit.paymentIntentId,
      gateway: 'sandbox',
      card: { brand: 'visa', last4: '4242' },
      paidBy: { userId: u.userId, name: u.name, email: u.email },
    });
    const pdf = await api(server)
      .get(`/v1/workspaces/${u.personalWs}/billing/deposits/${id}/receipt?format=pdf`)
      .set(u.auth)
      .buffer(true)
      .parse((res, cb) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => cb(null, Buffer.concat(chunks)));
      });
    expect(pdf.headers['content-type']).toBe('application/pdf');
    expect(pdf.headers['content-disposition']).toBe(`attachment; filename="tollgate-receipt-${id}.pdf"`);
    expect((pdf.body as Buffer).subarray(0, 5).toString()).toBe('%PDF-');

    await attach(server, u, u.personalWs, 'pm_card_chargeDeclined');
    const failed = await deposit(server, u, u.personalWs, '20');
    expect(failed.status).toBe(402);
    expect((await get(u, `/v1/workspaces/${u.personalWs}/billing/deposits/${failed.body.deposit.depositId}/receipt`)).status).toBe(404);
    expect((await get(u, `/v1/workspaces/${u.personalWs}/billing/deposits/nope/receipt`)).body.detail).toMatch(/No succeeded deposit/);
  });
});
