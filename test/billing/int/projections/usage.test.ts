import { usageProjection } from '../../../../src/billing/projections/usage/projection';
import { usageSeries } from '../../../../src/billing/projections/usage/queries';
import type { TokensDebited } from '../../../../src/inference/events';
import { projectionSpec } from '../../../support/projection-gwt';

// Buckets older than their retention expire at once: recent times keep the minute buckets alive.
const hour = Math.floor(Date.now() / 3600_000) * 3600;
const spec = projectionSpec(usageProjection);
const debit = (requestId: string, keyId: string, config: TokensDebited['data']['config'], atSeconds: number): TokensDebited & { created: string } => ({
  type: 'TokensDebited',
  created: new Date(atSeconds * 1000).toISOString(),
  data: { requestId, workspaceId: 'w1', keyId, config, inputTokens: 10, outputTokens: 20, inputPriceNanoUsd: '1', outputPriceNanoUsd: '1', amountNanoUsd: '30' },
});

describe('usage projection', () => {
  test('debits counted into hour buckets, in total and by key', () =>
    spec.given(debit('q1', 'k1', 'service_3_pi', hour + 10), debit('q2', 'k2', 'service_3_productivity', hour + 70), debit('q3', 'k1', 'service_3_pi', hour + 3600)).then(async ({ readModels }) => {
      const [totals] = await usageSeries(readModels, { workspaceId: 'w1', granularity: 'hour', from: hour, to: hour + 7200 });
      expect(totals.points.map((p) => p.requests)).toEqual([2, 1]);
      expect(totals.total).toMatchObject({ requests: 3, inputTokens: 30, outputTokens: 60 });
      const byKey = await usageSeries(readModels, { workspaceId: 'w1', granularity: 'hour', from: hour, to: hour + 7200, groupBy: 'key' });
      expect(Object.fromEntries(byKey.map((s) => [s.group, s.total.requests]))).toEqual({ k1: 2, k2: 1 });
    }));
});
