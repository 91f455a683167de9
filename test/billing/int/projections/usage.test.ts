import { usageProjection } from '../../../../src/billing/projections/usage/projection';
import { USAGE } from '../../../../src/billing/projections/usage/projection';
import { usageSeries } from '../../../../src/billing/projections/usage/queries';
import type { TokensDebited } from '../../../../src/inference/events';
import { projectionSpec } from '../../../support/projection-gwt';
import { formatUsd } from '../../../../src/platform/money';

// Buckets older than their retention expire at once: recent times keep the minute buckets alive.
const hour = Math.floor(Date.now() / 3600_000) * 3600;
const spec = projectionSpec(usageProjection);
const debit = (
  requestId: string,
  keyId: string,
  config: TokensDebited['data']['config'],
  atSeconds: number,
  amountNanoUsd = '30',
): TokensDebited & { created: string } => ({
  type: 'TokensDebited',
  created: new Date(atSeconds * 1000).toISOString(),
  data: {
    requestId,
    workspaceId: 'w1',
    keyId,
    config,
    inputTokens: 10,
    outputTokens: 20,
    inputPriceNanoUsd: '1',
    outputPriceNanoUsd: '1',
    amountNanoUsd,
  },
});

describe('usage projection', () => {
  test('debits counted into hour buckets, in total and by key', () =>
    spec
      .given(
        debit('q1', 'k1', 'service_3_pi', hour + 10),
        debit('q2', 'k2', 'service_3_productivity', hour + 70),
        debit('q3', 'k1', 'service_3_pi', hour + 3600),
      )
      .then(async ({ readModels }) => {
        const [totals] = await usageSeries(readModels, { workspaceId: 'w1', granularity: 'hour', from: hour, to: hour + 7200 });
        expect(totals.points.map((p) => p.requests)).toEqual([2, 1]);
        expect(totals.total).toMatchObject({ requests: 3, inputTokens: 30, outputTokens: 60 });
        const byKey = await usageSeries(readModels, {
          workspaceId: 'w1',
          granularity: 'hour',
          from: hour,
          to: hour + 7200,
          groupBy: 'key',
        });
        expect(Object.fromEntries(byKey.map((s) => [s.group, s.total.requests]))).toEqual({ k1: 2, k2: 1 });
      }));

  // Days are not stored: a day's point is the sum of its 24 hours, and the totals the sum of the
  // per-key fields, in every grouping; t:… fields and day buckets of an older generation are not read.
  test('a day is the sum of its hours and the totals the sum of the keys', () => {
    const day = hour - (hour % 86400);
    return spec
      .given(
        debit('q1', 'k1', 'service_3_pi', day + 5),
        debit('q2', 'k2', 'service_3_productivity', day + 23 * 3600 + 59),
        debit('q3', 'k1', 'service_3_pi', day + 86400 + 1),
      )
      .then(async ({ redis, readModels }) => {
        const k = await readModels.keys(USAGE);
        await redis.hset(k('hour', 'w1', String(day)), 't:req', '100');
        await redis.hset(k('day', 'w1', String(day)), 't:req', '100', 'k:k1:req', '100');
        const q = { workspaceId: 'w1', granularity: 'day' as const, from: day, to: day + 2 * 86400 };
        const [totals] = await usageSeries(readModels, q);
        expect(totals.points.map((p) => [p.t, p.requests, p.inputTokens])).toEqual([
          [new Date(day * 1000).toISOString(), 2, 20],
          [new Date((day + 86400) * 1000).toISOString(), 1, 10],
        ]);
        const byConfig = await usageSeries(readModels, { ...q, groupBy: 'config' });
        expect(byConfig.map((s) => [s.group, s.points.map((p) => p.requests)])).toEqual([
          ['service_3_pi', [1, 1]],
          ['service_3_productivity', [1, 0]],
        ]);
      });
  });

  // What a debit stores, field by field, pinned: the counting moved between the projector and the
  // bucket script (issue 19) and a rebuild must leave the same hashes and expiry times as before.
  test('a bucket holds every grouping, summed exactly, and expires after its retention', () => {
    const minute = hour + 120;
    const keyCreated = {
      type: 'ApiKeyCreated' as const,
      data: {
        workspaceId: 'w1',
        keyId: 'k1',
        name: 'k',
        keyHash: 'h',
        prefix: 'tg_',
        last4: 'abcd',
        scopes: [],
        expiresAt: null,
        createdBy: 'u1',
      },
    };
    const requested = {
      type: 'InferenceRequested' as const,
      data: {
        requestId: 'q1',
        workspaceId: 'w1',
        keyId: 'k1',
        config: 'service_3_pi' as const,
        endpoint: 'openai' as const,
        promptTokens: 10,
        maxTokens: 20,
        reservedNanoUsd: '30',
        webSearch: false,
      },
    };
    // 15 digits: past what the script sums as a double, so it goes to HINCRBY as written.
    return spec
      .given(
        keyCreated,
        requested,
        debit('q1', 'k1', 'service_3_pi', minute + 5, '999999999999999'),
        debit('q2', 'k1', 'service_3_pi', minute + 30, '7'),
      )
      .then(async ({ redis, readModels }) => {
        const k = await readModels.keys(USAGE);
        const fields = (p: string, req: string, inp: string, out: string, cost: string) => ({
          [`${p}:req`]: req,
          [`${p}:in`]: inp,
          [`${p}:out`]: out,
          [`${p}:cost`]: cost,
        });
        const both = ['2', '20', '40', '1000000000000006'] as const;
        const expected = {
          ...fields('k:k1', ...both),
          ...fields('m:service_3_pi', ...both),
          ...fields('u:u1', ...both),
          ...fields('e:openai', '1', '10', '20', '999999999999999'),
          ...fields('e:unknown', '1', '10', '20', '7'),
        };
        for (const [g, start] of [
          ['minute', minute],
          ['hour', hour],
        ] as const) {
          expect(await redis.hgetall(k(g, 'w1', String(start)))).toEqual(expected);
        }
        // Days are derived from hours on read, so hours are kept for good (as days were) and no day is stored.
        expect(await redis.call('EXPIRETIME', k('minute', 'w1', String(minute)))).toBe(minute + 60 + 8 * 86400);
        expect(await redis.call('EXPIRETIME', k('hour', 'w1', String(hour)))).toBe(-1);
        expect(await redis.exists(k('day', 'w1', String(hour - (hour % 86400))))).toBe(0);
      });
  });

  // Each cost below 1e15 is summed in the script as a double, but twelve of them pass 2^53: the
  // script must write its sums out before they could round (batch-writes.ts: room()).
  test('costs summed past 2^53 in one batch stay exact', () => {
    const minute = hour + 180;
    const costs = Array.from({ length: 12 }, (_, i) => 999_999_999_999_999n - BigInt(i)); // a double's sum of these is 2 short
    const debits = costs.map((cost, i) => debit(`q${i}`, 'k1', 'service_3_pi', minute + i, cost.toString()));
    const total = costs.reduce((a, b) => a + b).toString();
    return spec.given(...debits).then(async ({ redis, readModels }) => {
      const k = await readModels.keys(USAGE);
      const bucket = await redis.hgetall(k('minute', 'w1', String(minute)));
      expect([bucket['k:k1:cost'], bucket['e:unknown:cost'], bucket['k:k1:req']]).toEqual([total, total, '12']);
      const [day] = await usageSeries(readModels, { workspaceId: 'w1', granularity: 'day', from: hour, to: hour + 1 });
      expect([day.total.cost, day.total.requests]).toEqual([formatUsd(BigInt(total)), 12]);
    });
  });

  // A rebuild of debits older than the minute buckets' retention: their minute bucket must not stay
  // behind (without an expiry, holding only the member and endpoint fields, as it did when the
  // EXPIREATs ran before the bucket script).
  test('a debit older than its minute retention leaves no minute bucket', () => {
    const old = hour - 9 * 86400;
    return spec.given(debit('q1', 'k1', 'service_3_pi', old + 5)).then(async ({ redis, readModels }) => {
      const k = await readModels.keys(USAGE);
      expect(await redis.exists(k('minute', 'w1', String(old)))).toBe(0);
      expect(await redis.hget(k('hour', 'w1', String(old - (old % 3600))), 'u:unknown:req')).toBe('1');
    });
  });
});
