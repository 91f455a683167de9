import { usageProjection } from '../../../../src/billing/projections/usage/projection';
import { USAGE } from '../../../../src/billing/projections/usage/projection';
import { usageSeries } from '../../../../src/billing/projections/usage/queries';
import type { TokensDebited } from '../../../../src/inference/events';
import { projectionSpec } from '../../../support/projection-gwt';

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
          ...fields('t', ...both),
          ...fields('k:k1', ...both),
          ...fields('m:service_3_pi', ...both),
          ...fields('u:u1', ...both),
          ...fields('e:openai', '1', '10', '20', '999999999999999'),
          ...fields('e:unknown', '1', '10', '20', '7'),
        };
        for (const [g, start] of [
          ['minute', minute],
          ['hour', hour],
          ['day', hour - (hour % 86400)],
        ] as const) {
          expect(await redis.hgetall(k(g, 'w1', String(start)))).toEqual(expected);
        }
        expect(await redis.call('EXPIRETIME', k('minute', 'w1', String(minute)))).toBe(minute + 60 + 8 * 86400);
        expect(await redis.call('EXPIRETIME', k('hour', 'w1', String(hour)))).toBe(hour + 3600 + 100 * 86400);
        expect(await redis.call('EXPIRETIME', k('day', 'w1', String(hour - (hour % 86400))))).toBe(-1);
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
      expect([bucket['t:cost'], bucket['k:k1:cost'], bucket['e:unknown:cost'], bucket['t:req']]).toEqual([total, total, total, '12']);
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
      expect(await redis.hget(k('day', 'w1', String(old - (old % 86400))), 'u:unknown:req')).toBe('1');
    });
  });
});
