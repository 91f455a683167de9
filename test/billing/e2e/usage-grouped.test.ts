import { randomUUID } from 'node:crypto';
import { startTestServer, TestServer } from '../../support/harness';
import { addMember, appendKey, createWorkspace, fund } from '../../accounts/e2e/helpers';
import { api, newUser, TestUser } from './helpers';
import { debitData } from '../../support/debit';
import { expectMatchesContract } from '../../support/contract';
import { usageSeries } from '../../../src/billing/routes/usage-schemas';
import { streams } from '../../../src/platform/streams';
import { formatUsd, parseUsd } from '../../../src/platform/money';
import type { Endpoint } from '../../../src/inference/events';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server?.close());

const usage = (u: TestUser, ws: string, q: string) => api(server).get(`/v1/workspaces/${ws}/usage?${q}`).set(u.auth);

/** One request as the engine writes it: InferenceRequested (naming the endpoint), then its TokensDebited. */
async function request(ws: string, keyId: string, endpoint: Endpoint, config: string, inputTokens: number, outputTokens: number) {
  const data = debitData(ws, { keyId, config, inputTokens, outputTokens });
  const requested = {
    requestId: data.requestId,
    workspaceId: ws,
    keyId,
    config,
    endpoint,
    promptTokens: inputTokens,
    maxTokens: outputTokens,
    reservedNanoUsd: data.amountNanoUsd,
    webSearch: false,
  };
  const r = await server.services.store.append(
    streams.inference(data.requestId),
    [
      { id: randomUUID(), type: 'InferenceRequested', data: requested },
      { id: randomUUID(), type: 'TokensDebited', data },
    ],
    { expectedRevision: 'no_stream' },
  );
  await server.services.progress.waitFor(r.position, 5000);
}

/** Sums a CSV column of USD decimal strings exactly. */
const sumUsd = (rows: string[][], col: number) => formatUsd(rows.reduce((n, r) => n + parseUsd(r[col]), 0n));

describe('usage grouped by key, member, config and endpoint; CSV and FOCUS exports', () => {
  test('each grouping splits the same total, and the total equals the ledger', async () => {
    const admin = await newUser(server, 'groupadmin');
    const member = await newUser(server, 'groupmember');
    const ws = await createWorkspace(server, admin, 'Grouped');
    await addMember(server, admin, ws, member);
    await fund(server, ws);
    const keyA = await appendKey(server, ws, admin.userId, { secret: `tg_${randomUUID()}`, name: 'admin key' });
    const keyB = await appendKey(server, ws, member.userId, { secret: `tg_${randomUUID()}`, name: 'member key' });
    await request(ws, keyA, 'inference', 'service_3_pi', 100, 10); // 0.00035
    await request(ws, keyA, 'openai', 'service_3_productivity', 1000, 200); // 0.0045
    await request(ws, keyB, 'streaming', 'service_3_pi', 1, 1); // 0.0000125
    await request(ws, keyB, 'openai', 'service_3_pi', 10, 0); // 0.000025

    const total = await usage(admin, ws, 'granularity=day');
    expect(total.body.series[0].total).toEqual({ requests: 4, inputTokens: 1111, outputTokens: 211, cost: '0.0048875' });
    // The ledger's debits sum to the same amount.
    const ledger = await api(server).get(`/v1/workspaces/${ws}/billing/ledger?limit=200`).set(admin.auth);
    const debits = (ledger.body.entries as Array<{ amount: string }>)
      .filter((e) => e.amount.startsWith('-'))
      .map((e) => parseUsd(e.amount.slice(1)));
    expect(debits).toHaveLength(4);
    expect(formatUsd(debits.reduce((a, b) => a + b, 0n))).toBe('0.0048875');

    const byMember = await usage(admin, ws, 'granularity=hour&groupBy=member');
    expect(byMember.status).toBe(200);
    await expectMatchesContract(byMember, usageSeries);
    const members = Object.fromEntries(
      byMember.body.series.map((x: { memberId: string; memberName: string; total: { cost: string; requests: number } }) => [
        x.memberId,
        [x.memberName, x.total.requests, x.total.cost],
      ]),
    );
    expect(members).toEqual({ [admin.userId]: [admin.name, 2, '0.00485'], [member.userId]: [member.name, 2, '0.0000375'] });

    const byEndpoint = await usage(admin, ws, 'granularity=day&groupBy=endpoint');
    await expectMatchesContract(byEndpoint, usageSeries);
    expect(
      byEndpoint.body.series.map((x: { endpoint: string; total: { requests: number; cost: string } }) => [
        x.endpoint,
        x.total.requests,
        x.total.cost,
      ]),
    ).toEqual([
      ['inference', 1, '0.00035'],
      ['openai', 2, '0.004525'],
      ['streaming', 1, '0.0000125'],
    ]);

    const byConfig = await usage(admin, ws, 'granularity=day&groupBy=config');
    expect(byConfig.body.series.map((x: { config: string; total: { requests: number } }) => [x.config, x.total.requests])).toEqual([
      ['service_3_pi', 3],
      ['service_3_productivity', 1],
    ]);
    const byKey = await usage(member, ws, 'granularity=day&groupBy=key');
    expect(
      Object.fromEntries(
        byKey.body.series.map((x: { keyId: string; keyName: string; total: { cost: string } }) => [x.keyId, [x.keyName, x.total.cost]]),
      ),
    ).toEqual({
      [keyA]: ['admin key', '0.00485'],
      [keyB]: ['member key', '0.0000375'],
    });

    // CSV: one row per group and bucket with usage; its costs add up to the total.
    const csv = await usage(admin, ws, 'granularity=hour&groupBy=member&format=csv');
    expect(csv.status).toBe(200);
    expect(csv.headers['content-type']).toBe('text/csv; charset=utf-8');
    expect(csv.headers['content-disposition']).toBe(`attachment; filename="tollgate-usage-${ws}.csv"`);
    await expectMatchesContract(csv, usageSeries);
    const lines = csv.text.trimEnd().split('\r\n');
    expect(lines[0]).toBe('bucket_start,bucket_end,group_by,group,group_name,requests,input_tokens,output_tokens,cost_usd');
    const rows = lines.slice(1).map((l) => l.split(','));
    expect(rows.length).toBeGreaterThanOrEqual(2);
    expect(new Set(rows.map((r) => r[3]))).toEqual(new Set([admin.userId, member.userId]));
    expect(sumUsd(rows, 8)).toBe('0.0048875');

    // FOCUS: resource = key, quantity = tokens, cost exact, billing period = the UTC month.
    const focus = await usage(admin, ws, 'granularity=day&format=focus');
    expect(focus.status).toBe(200);
    expect(focus.headers['content-disposition']).toBe(`attachment; filename="tollgate-focus-${ws}.csv"`);
    const flines = focus.text.trimEnd().split('\r\n');
    const header = flines[0].split(',');
    expect(header.slice(0, 6)).toEqual([
      'BillingAccountId',
      'BillingPeriodStart',
      'BillingPeriodEnd',
      'ChargePeriodStart',
      'ChargePeriodEnd',
      'ChargeCategory',
    ]);
    const col = (name: string) => header.indexOf(name);
    const frows = flines.slice(1).map((l) => l.split(','));
    expect(frows).toHaveLength(2);
    expect(new Set(frows.map((r) => r[col('ResourceId')]))).toEqual(new Set([keyA, keyB]));
    expect(sumUsd(frows, col('BilledCost'))).toBe('0.0048875');
    expect(frows.reduce((n, r) => n + Number(r[col('ConsumedQuantity')]), 0)).toBe(1111 + 211);
    const now = new Date();
    expect(frows[0][col('BillingPeriodStart')]).toBe(new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1)).toISOString());
    expect(frows[0][col('ConsumedUnit')]).toBe('Tokens');
    expect(frows[0][col('BillingCurrency')]).toBe('USD');
  });

  test('an unknown grouping or format is a clear 422 and changes nothing; focus is per key only', async () => {
    const u = await newUser(server, 'groupbad');
    const bad = await usage(u, u.personalWs, 'groupBy=tag');
    expect(bad.status).toBe(422);
    expect(bad.body.detail[0].loc).toEqual(['query', 'groupBy']);
    expect(bad.body.detail[0].msg).toMatch(/groupBy must be one of key, member, config, endpoint, model/);
    const fmt = await usage(u, u.personalWs, 'format=xml');
    expect(fmt.status).toBe(422);
    expect(fmt.body.detail[0].loc).toEqual(['query', 'format']);
    const focusByMember = await usage(u, u.personalWs, 'format=focus&groupBy=member');
    expect(focusByMember.status).toBe(422);
    expect(focusByMember.body.detail[0].msg).toMatch(/format=focus has one row per API key/);
  });
});
