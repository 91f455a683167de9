import { randomUUID } from 'node:crypto';
import { streams } from '../../../src/platform/streams';
import { usd } from '../../../src/platform/money';
import { periodIdsAt } from '../../../src/platform/budget-periods';
import type { RecordedEvent } from '../../../src/platform/eventstore/port';
import { keyBudgetAlertReactor } from '../../../src/billing/workers/budget-alerts/reactor';
import { payloadOf } from '../../../src/webhooks/event-types';
import { startTestServer, TestServer } from '../../support/harness';
import { until } from '../../support/wait';
import { fund, settle } from '../../inference/int/support/seed';
import { debitData } from '../../support/debit';

/**
 * The key-budget alerts: the reactor behind the projector appends KeyBudget{80,100}PercentReached
 * once per key, period and threshold when a debit's period spend crosses it (real store, Redis,
 * projector and reactors), and a retried reaction writes nothing twice.
 */
let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server.close());

async function append(stream: string, type: string, data: Record<string, unknown>) {
  const r = await server.services.store.append(stream, [{ id: randomUUID(), type, data }], { expectedRevision: 'any' });
  await settle(server.services);
  return r;
}
const debit = (ws: string, keyId: string, amount: bigint) => {
  const data = debitData(ws, { keyId, amountNanoUsd: amount });
  return append(streams.inference(data.requestId), 'TokensDebited', data);
};
const alertsOf = async (keyId: string) =>
  (await server.services.store.readAll({ fromPosition: 0n, maxCount: 1_000_000 })).filter(
    (e) => e.type.startsWith('KeyBudget') && (e.data as { keyId: string }).keyId === keyId,
  );

test('80% and 100% of a daily key budget: one event each, in its own stream, with the period; a retried reaction adds nothing', async () => {
  const ws = randomUUID();
  const keyId = randomUUID();
  await fund(server.services, ws, { nano: usd(100) });
  await append(streams.workspace(ws), 'ApiKeyBudgetChangedV2', {
    workspaceId: ws,
    keyId,
    budgetNanoUsd: '1000',
    period: 'daily',
    previousBudgetNanoUsd: null,
    previousPeriod: null,
    by: 'u1',
  });
  await debit(ws, keyId, 700n); // 70%: nothing
  await debit(ws, keyId, 150n); // 85%: the 80% event
  const eighty = await until(async () => (await alertsOf(keyId)).length === 1 && (await alertsOf(keyId)));
  const day = periodIdsAt(new Date(eighty[0].created)).daily;
  expect(eighty[0]).toMatchObject({
    type: 'KeyBudget80PercentReached',
    stream: streams.keyBudgetThreshold(keyId, day, 80),
    data: { workspaceId: ws, keyId, thresholdPercent: 80, budgetNanoUsd: '1000', spentNanoUsd: '850', period: 'daily', periodId: day },
  });
  await debit(ws, keyId, 100n); // 95%: nothing new
  await debit(ws, keyId, 100n); // 105%: the 100% event
  const both = await until(async () => (await alertsOf(keyId)).length === 2 && (await alertsOf(keyId)));
  expect(both.map((e) => [e.type, (e.data as { spentNanoUsd: string }).spentNanoUsd])).toEqual([
    ['KeyBudget80PercentReached', '850'],
    ['KeyBudget100PercentReached', '1050'],
  ]);
  expect((both[1].data as { resetsAt: string }).resetsAt).toBe(new Date(Date.parse(`${day}T00:00:00Z`) + 86_400_000).toISOString());

  // At least once: the reaction runs again for every debit, its markers gone (Redis lost them).
  const s = server.services;
  await s.redis.del(...(await s.redis.keys(`${s.ks.prefix}key-budget-alerted:${keyId}:*`)));
  const debits = (await s.store.readAll({ fromPosition: 0n, maxCount: 1_000_000 })).filter(
    (e) => e.type === 'TokensDebited' && (e.data as { keyId: string }).keyId === keyId,
  );
  const again = keyBudgetAlertReactor({ readModels: s.readModels, redis: s.redis, ks: s.ks, store: s.store });
  for (const e of debits) await again.react(e as RecordedEvent<'TokensDebited', never>);
  expect((await alertsOf(keyId)).map((e) => e.id)).toEqual(both.map((e) => e.id));

  // The webhook types they map to.
  expect(payloadOf(both[0])?.type).toBe('key.budget_80_percent');
  expect(payloadOf(both[1])).toMatchObject({ type: 'key.budget_100_percent', data: { keyId, thresholdPercent: 100, periodId: day } });
});

test('a key without a budget, or spend below 80%, writes no alert', async () => {
  const ws = randomUUID();
  const [plain, budgeted] = [randomUUID(), randomUUID()];
  await fund(server.services, ws, { nano: usd(100) });
  await append(streams.workspace(ws), 'ApiKeyBudgetChangedV2', {
    workspaceId: ws,
    keyId: budgeted,
    budgetNanoUsd: '1000',
    period: 'weekly',
    previousBudgetNanoUsd: null,
    previousPeriod: null,
    by: 'u1',
  });
  await debit(ws, plain, 5000n);
  await debit(ws, budgeted, 799n);
  // The alert reactor saw both debits: its checkpoint is past them.
  const head = await server.services.store.headPosition();
  await until(
    async () => BigInt((await server.services.redis.get(server.services.ks.reactorCheckpoint('key-budget-alerts'))) ?? '0') >= head,
  );
  expect(await alertsOf(plain)).toEqual([]);
  expect(await alertsOf(budgeted)).toEqual([]);
});

test("keyBudgetAt reads the spend of the budget's period and never the key's whole spend history", async () => {
  const { keyBudgetAt } = await import('../../../src/billing/projections/balances/queries');
  const { BALANCES } = await import('../../../src/billing/projections/balances/projection');
  const ws = randomUUID();
  const keyId = randomUUID();
  await fund(server.services, ws, { nano: usd(100) });
  await append(streams.workspace(ws), 'ApiKeyBudgetChangedV2', {
    workspaceId: ws,
    keyId,
    budgetNanoUsd: '1000',
    period: 'weekly',
    previousBudgetNanoUsd: null,
    previousPeriod: null,
    by: 'u1',
  });
  await debit(ws, keyId, 300n);
  const rm = server.services.readModels;
  // A long-lived key: many past periods in its spend hash.
  const spendKey = (await rm.keys(BALANCES)).ws(ws, 'key-spend', keyId);
  await rm.redis.hset(spendKey, Object.fromEntries(Array.from({ length: 400 }, (_, i) => [`2020-old-${i}`, '5'])));
  const at = new Date();
  const read = jest.spyOn(rm, 'read');
  try {
    const status = await keyBudgetAt(rm, ws, keyId, at);
    expect(status).toMatchObject({ budget: 1000n, period: 'weekly', spent: 300n, window: { id: periodIdsAt(at).weekly } });
    const commands = read.mock.calls.flatMap(([, reads]) =>
      reads(Object.assign((...parts: string[]) => parts.join(':'), { ws: (...parts: string[]) => parts.join(':') })),
    );
    expect(commands.some(([cmd]) => cmd === 'hgetall')).toBe(false);
  } finally {
    read.mockRestore();
  }
  expect(await keyBudgetAt(rm, ws, randomUUID(), at)).toBeNull();
});
