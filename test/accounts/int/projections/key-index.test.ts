import { keyIndexProjection } from '../../../../src/accounts/projections/key-index/projection';
import { KeyIndex } from '../../../../src/accounts/projections/key-index/queries';
import type { ApiKeyCreated } from '../../../../src/accounts/events';
import { projectionSpec } from '../../../support/projection-gwt';

const spec = projectionSpec(keyIndexProjection);
const created: ApiKeyCreated = {
  type: 'ApiKeyCreated',
  data: {
    workspaceId: 'w1',
    keyId: 'k1',
    name: 'one',
    keyHash: 'h1',
    prefix: 'tgk_aaaa',
    last4: '1111',
    scopes: ['inference'],
    expiresAt: null,
    createdBy: 'ann',
  },
};

describe('key-index projection', () => {
  test("a key's hash finds its record, renamed and with the rate limit an operator set", () =>
    spec
      .given(
        created,
        { type: 'ApiKeyRenamed', data: { workspaceId: 'w1', keyId: 'k1', keyHash: 'h1', name: 'uno', previousName: 'one', by: 'ann' } },
        { type: 'RateLimitChanged', data: { workspaceId: 'w1', keyId: 'k1', keyHash: 'h1', requestsPerMinute: 120, by: 'operator' } },
      )
      .then(async ({ redis, ks }) => {
        const keys = new KeyIndex(redis, ks);
        expect(await keys.lookupHash('h1')).toEqual({
          keyId: 'k1',
          workspaceId: 'w1',
          name: 'uno',
          scopes: ['inference'],
          expiresAt: null,
          rateLimit: 120,
        });
        expect(await keys.lookupHash('h2')).toBeNull();
      }));

  test("a roll: the new secret has the record; the previous one works until the grace period's end; a delete ends both", async () => {
    // The previous secret's copy expires (PEXPIREAT) a day after the grace period: the grace period must end in the future.
    const validUntil = new Date(Date.now() + 3600_000).toISOString();
    const rolled = {
      type: 'ApiKeyRolled',
      data: {
        workspaceId: 'w1',
        keyId: 'k1',
        keyHash: 'h2',
        prefix: 'tgk_bbbb',
        last4: '2222',
        previousKeyHash: 'h1',
        gracePeriodSeconds: 3600,
        previousKeyValidUntil: validUntil,
        by: 'ann',
      },
    } as const;
    await spec.given(created, rolled).then(async ({ redis, ks }) => {
      const keys = new KeyIndex(redis, ks);
      expect(await keys.lookupHash('h2')).toMatchObject({ keyId: 'k1', name: 'one', expiresAt: null });
      expect(await keys.lookupHash('h1')).toMatchObject({ keyId: 'k1', rolledAway: true, expiresAt: new Date(validUntil) });
    });
    await spec
      .given(created, rolled, { type: 'ApiKeyDeleted', data: { workspaceId: 'w1', keyId: 'k1', keyHash: 'h2', by: 'ann' } })
      .then(async ({ redis, ks }) => {
        const keys = new KeyIndex(redis, ks);
        expect(await keys.lookupHash('h2')).toBeNull();
        expect(await keys.lookupHash('h1')).toBeNull();
      });
  });
});
