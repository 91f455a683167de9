import { randomUUID } from 'node:crypto';
import { streams } from '../../../src/platform/streams';
import { formatUsd, parseUsd } from '../../../src/platform/money';
import { LedgerReplay } from '../../../src/billing';
import { verifyLedger } from '../../../src/cli/ledger/verify';
import { startTestServer, TestServer } from '../../support/harness';
import { api, billing, fundedUser, type TestUser } from './helpers';

/**
 * Credit notes end to end (docs/BILLING.md, "Credit notes"): an operator credits part of a request's
 * cost, at most the cost less the earlier notes; the note is a `credit_note` grant drawn down like
 * any other, shown on the request's receipt, and `ledger verify` stays at 0 differences.
 */
const TOKEN = 'operator-token-credit-notes-0123456789';
let server: TestServer;
let ann: TestUser;
let secret: string;
beforeAll(async () => {
  server = await startTestServer({ ADMIN_TOKEN: TOKEN, SWEEPER_ENABLED: 'false' });
  ann = await fundedUser(server, 'notes');
  secret = (await api(server).post(`/v1/workspaces/${ann.personalWs}/keys`).set(ann.auth).send({ name: 'notes key' }).expect(201)).body
    .secret as string;
});
afterAll(() => server?.close());

/** One billed inference request: its id and cost (nano-USD). */
async function billedRequest(): Promise<{ requestId: string; cost: bigint }> {
  const call = await api(server)
    .post('/external/api/inference')
    .set('Authorization', `Bearer ${secret}`)
    .send({ context: [{ type: 'Human', text: 'Hello there' }], config: 'service_3_productivity', max_tokens: 12 });
  expect(call.status).toBe(200);
  const requestId = call.headers['x-request-id'] as string;
  const receipt = (await api(server).get(`/v1/workspaces/${ann.personalWs}/requests/${requestId}`).set(ann.auth).expect(200)).body;
  expect(receipt.status).toBe('completed');
  return { requestId, cost: parseUsd(receipt.cost as string) };
}

const note = (
  ws: string,
  requestId: string,
  body: Record<string, unknown>,
  key: string | null = randomUUID(),
  auth = `Bearer ${TOKEN}`,
) => {
  const req = api(server).post(`/admin/workspaces/${ws}/requests/${requestId}/credit-notes`).set('Authorization', auth);
  return (key === null ? req : req.set('Idempotency-Key', key)).send(body);
};
const billingEvents = async (ws: string) => (await server.services.store.readStream(streams.billing(ws))).length;

test('bad input is 422 naming the field, an amount above the cost too, and appends nothing', async () => {
  const ws = ann.personalWs;
  const { requestId, cost } = await billedRequest();
  const before = await billingEvents(ws);
  const cases: Array<[Record<string, unknown>, string]> = [
    [{ amount: '0', reason: 'x' }, 'amount'],
    [{ amount: '-1', reason: 'x' }, 'amount'],
    [{ amount: '0.0000000001', reason: 'x' }, 'amount'],
    [{ amount: 1, reason: 'x' }, 'amount'],
    [{ amount: formatUsd(cost + 1n), reason: 'x' }, 'amount'],
    [{ amount: formatUsd(cost) }, 'reason'],
    [{ amount: formatUsd(cost), reason: '   ' }, 'reason'],
    [{ amount: formatUsd(cost), reason: 'x'.repeat(501) }, 'reason'],
  ];
  for (const [body, field] of cases) {
    const r = await note(ws, requestId, body);
    expect({ body, status: r.status }).toEqual({ body, status: 422 });
    expect(r.body.detail[0].loc).toEqual(['body', field]);
  }
  const noKey = await note(ws, requestId, { amount: formatUsd(cost), reason: 'x' }, null);
  expect(noKey.status).toBe(422);
  expect(noKey.body.detail[0].loc).toEqual(['header', 'Idempotency-Key']);
  expect(await billingEvents(ws)).toBe(before);
});

test('operators only: a member 403, an unknown request or workspace 404, another workspace’s request 404', async () => {
  const ws = ann.personalWs;
  const { requestId } = await billedRequest();
  const body = { amount: '0.000000001', reason: 'slow answer' };
  expect((await note(ws, requestId, body, randomUUID(), ann.auth.Authorization)).status).toBe(403);
  expect((await note(ws, randomUUID(), body)).status).toBe(404);
  expect((await note(ws, 'not-a-request', body)).status).toBe(404);
  expect((await note(randomUUID(), requestId, body)).status).toBe(404);
  const other = await fundedUser(server, 'other-notes');
  expect((await note(other.personalWs, requestId, body)).status).toBe(404);
});

test('notes up to the cost: idempotent, a credit_note grant drawn before paid credit, on the receipt, and the ledger verifies', async () => {
  const s = server.services;
  const ws = ann.personalWs;
  const { requestId, cost } = await billedRequest();
  const balance0 = parseUsd((await billing(server, ann, ws)).body.balance as string);
  const half = cost / 2n;
  const key = randomUUID();
  const first = await note(ws, requestId.toUpperCase(), { amount: formatUsd(half), reason: 'slow answer' }, key);
  expect(first.status).toBe(201);
  expect(first.body.creditNote).toMatchObject({
    requestId,
    amount: formatUsd(half),
    reason: 'slow answer',
    requestCost: formatUsd(cost),
    credited: formatUsd(half),
  });
  const noteId = first.body.creditNote.creditNoteId as string;
  const again = await note(ws, requestId, { amount: formatUsd(half), reason: 'slow answer' }, key);
  expect(again.status).toBe(201);
  expect(again.headers['idempotent-replayed']).toBe('true');
  expect(again.body.creditNote.creditNoteId).toBe(noteId);
  expect((await note(ws, requestId, { amount: formatUsd(half + 1n), reason: 'slow answer' }, key)).status).toBe(409);

  // The rest of the cost, then nothing more: the cap is the cost less the earlier notes.
  const second = await note(ws, requestId, { amount: formatUsd(cost - half), reason: 'and the rest' });
  expect(second.status).toBe(201);
  expect(second.body.creditNote.credited).toBe(formatUsd(cost));
  const before = await billingEvents(ws);
  const over = await note(ws, requestId, { amount: '0.000000001', reason: 'one more' });
  expect(over.status).toBe(422);
  expect(over.body.detail[0]).toMatchObject({ loc: ['body', 'amount'], msg: expect.stringContaining('at most 0 USD') });
  expect(await billingEvents(ws)).toBe(before);

  // The balance and the grants.
  expect(parseUsd((await billing(server, ann, ws)).body.balance as string)).toBe(balance0 + cost);
  const grants = (await api(server).get(`/v1/workspaces/${ws}/billing/credit-grants`).set(ann.auth).expect(200)).body.grants as Array<
    Record<string, unknown>
  >;
  expect(grants.find((g) => g.grantId === noteId)).toMatchObject({
    category: 'credit_note',
    source: 'operator',
    amount: formatUsd(half),
    remaining: formatUsd(half),
    priority: 40,
    expiresAt: null,
    note: 'slow answer',
    requestId,
    status: 'active',
  });

  // The receipt shows both notes; its signature is unchanged by them.
  const receipt = (await api(server).get(`/v1/workspaces/${ws}/requests/${requestId}`).set(ann.auth).expect(200)).body;
  expect(receipt.creditNotes).toEqual([
    expect.objectContaining({ creditNoteId: noteId, amount: formatUsd(half), reason: 'slow answer' }),
    expect.objectContaining({ amount: formatUsd(cost - half), reason: 'and the rest' }),
  ]);
  expect(receipt.credited).toBe(formatUsd(cost));
  expect(receipt.cost).toBe(formatUsd(cost));

  // The next debit draws the first note first (priority 40, before the deposit's 50).
  const next = await billedRequest();
  const entries = (await api(server).get(`/v1/workspaces/${ws}/billing/ledger`).set(ann.auth).query({ limit: 200 }).expect(200)).body
    .entries as Array<{
    type: string;
    ref: string;
    amountNanoUsd: string;
    category?: string;
    requestId?: string;
    drawn?: Array<{ grantId: string }>;
  }>;
  expect(entries.find((e) => e.ref === noteId)).toMatchObject({
    type: 'CreditNoteIssued',
    amountNanoUsd: half.toString(),
    category: 'credit_note',
    requestId,
  });
  const debit = entries.find((e) => e.type === 'TokensDebited' && e.ref === next.requestId)!;
  expect(debit.drawn![0].grantId).toBe(noteId);

  // The replay agrees with the read models: 0 differences.
  const replay = new LedgerReplay();
  for (const e of await s.store.readAll()) replay.apply(e);
  expect(replay.books.get(ws)!.grants.get(noteId)).toMatchObject({ category: 'credit_note', priority: 40 });
  const report = await verifyLedger(s.store, s.redis, s.ks, s.config.PROJECTION_PARTITIONS);
  expect(report.differences).toEqual([]);
  expect(report.negative).toEqual([]);
});
