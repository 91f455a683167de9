import { apiKeysProjection } from '../../../../src/accounts/projections/api-keys/projection';
import { keysOf } from '../../../../src/accounts/projections/api-keys/queries';
import type { ApiKeyCreated } from '../../../../src/accounts/events';
import { projectionSpec } from '../../../support/projection-gwt';

const spec = projectionSpec(apiKeysProjection);
const created = (keyId: string): ApiKeyCreated & { created: string } => ({
  type: 'ApiKeyCreated',
  created: '2026-03-01T00:00:00.000Z',
  data: {
    workspaceId: 'w1',
    keyId,
    name: keyId,
    keyHash: `h-${keyId}`,
    prefix: 'tgk_aaaa',
    last4: '1111',
    scopes: ['inference'],
    expiresAt: null,
    createdBy: 'ann',
  },
});

describe('api-keys projection', () => {
  test("a workspace's keys with their current name, budget and last roll; a deleted key is gone", () =>
    spec
      .given(
        created('k1'),
        created('k2'),
        {
          type: 'ApiKeyRenamed',
          data: { workspaceId: 'w1', keyId: 'k1', keyHash: 'h-k1', name: 'renamed', previousName: 'k1', by: 'ann' },
        },
        {
          type: 'ApiKeyBudgetChanged',
          data: { workspaceId: 'w1', keyId: 'k1', monthlyBudgetNanoUsd: '5000', previousBudgetNanoUsd: null, by: 'ann' },
        },
        {
          type: 'ApiKeyRolled',
          created: '2026-03-02T00:00:00.000Z',
          data: {
            workspaceId: 'w1',
            keyId: 'k1',
            keyHash: 'h2',
            prefix: 'tgk_bbbb',
            last4: '2222',
            previousKeyHash: 'h-k1',
            gracePeriodSeconds: 0,
            previousKeyValidUntil: '2026-03-02T00:00:00.000Z',
            by: 'ann',
          },
        },
        { type: 'ApiKeyDeleted', data: { workspaceId: 'w1', keyId: 'k2', keyHash: 'h-k2', by: 'ann' } },
      )
      .then(async ({ readModels }) => {
        const keys = await keysOf(readModels, 'w1');
        expect(keys).toHaveLength(1);
        expect(keys[0]).toMatchObject({
          keyId: 'k1',
          name: 'renamed',
          budget: 5000n,
          budgetPeriod: 'monthly',
          createdBy: 'ann',
          created: '2026-03-01T00:00:00.000Z',
          lastRoll: {
            prefix: 'tgk_bbbb',
            last4: '2222',
            rolledAt: '2026-03-02T00:00:00.000Z',
            previousSecretValidUntil: '2026-03-02T00:00:00.000Z',
          },
        });
        expect(JSON.stringify(keys, (_k, v) => (typeof v === 'bigint' ? v.toString() : v))).not.toContain('h-k1');
      }));

  test('a V2 budget carries its period; a later released (monthly) one and a removal reset it', () =>
    spec
      .given(
        created('k1'),
        created('k2'),
        {
          type: 'ApiKeyBudgetChangedV2',
          data: {
            workspaceId: 'w1',
            keyId: 'k1',
            budgetNanoUsd: '700',
            period: 'daily',
            previousBudgetNanoUsd: null,
            previousPeriod: null,
            by: 'ann',
          },
        },
        {
          type: 'ApiKeyBudgetChangedV2',
          data: {
            workspaceId: 'w1',
            keyId: 'k2',
            budgetNanoUsd: '900',
            period: 'weekly',
            previousBudgetNanoUsd: null,
            previousPeriod: null,
            by: 'ann',
          },
        },
        {
          type: 'ApiKeyBudgetChanged',
          data: { workspaceId: 'w1', keyId: 'k2', monthlyBudgetNanoUsd: '800', previousBudgetNanoUsd: '900', by: 'ann' },
        },
      )
      .then(async ({ readModels }) => {
        const keys = await keysOf(readModels, 'w1');
        expect(keys.map((k) => [k.keyId, k.budget, k.budgetPeriod])).toEqual([
          ['k1', 700n, 'daily'],
          ['k2', 800n, 'monthly'],
        ]);
      }));
});
