import { usersProjection } from '../../../../src/accounts/projections/users/projection';
import { profilesOf } from '../../../../src/accounts/projections/users/queries';
import { projectionSpec } from '../../../support/projection-gwt';

const spec = projectionSpec(usersProjection);

describe('users projection', () => {
  test('a registered user has a public profile, without the password hash, dated when the store recorded it', () =>
    spec
      .given({
        type: 'UserRegistered',
        data: { userId: 'u1', email: 'ann@example.com', name: 'Ann', passwordHash: 'scrypt$secret' },
        created: '2026-03-01T10:00:00.000Z',
      })
      .then(async ({ readModels, redis, ks }) => {
        expect(await profilesOf(readModels, ['u1', 'nobody'])).toEqual(
          new Map([['u1', { userId: 'u1', email: 'ann@example.com', name: 'Ann', registered: '2026-03-01T10:00:00.000Z' }]]),
        );
        const everything = await redis.keys(`${ks.prefix}*`);
        for (const k of everything)
          if ((await redis.type(k)) === 'hash') expect(Object.values(await redis.hgetall(k))).not.toContain('scrypt$secret');
      }));
});
