import { Redis } from 'ioredis';
import { MERGE_KEY } from '../../../src/accounts/projections/audit/projection';
import { SETTLE } from '../../../src/accounts/projections/invitations/projection';
import { DELETE_ROLLED, ROLL, SET_IF_EXISTS, SET_ON_ROLLED } from '../../../src/accounts/projections/key-index/projection';
import { KeyIndex } from '../../../src/accounts/projections/key-index/queries';
import { Keyspace } from '../../../src/platform/projections/keyspace';
import { cleanupPrefix, TEST_REDIS_URL, uniquePrefix } from '../../support/redis';

// The accounts projections' Lua scripts, each called through its declaration on the real Redis.
describe('accounts projection scripts', () => {
  const prefix = uniquePrefix();
  let redis: Redis;
  let n = 0;
  const key = (name: string) => `${prefix}${name}:${++n}`;
  beforeAll(() => (redis = new Redis(TEST_REDIS_URL)));
  afterAll(async () => {
    redis.disconnect();
    await cleanupPrefix(TEST_REDIS_URL, prefix);
  });

  describe('key index: roll', () => {
    const fields = { fieldRolledAway: 'rolledAway', fieldExpiresAt: 'expiresAt' };
    const keptUntilMs = 4_000_000_000_000;

    it('with a grace period: the new secret gets a copy (without the rolled-away mark), the old one is marked and expires', async () => {
      const [previousRecord, newRecord, secrets] = [key('rec-old'), key('rec-new'), key('secrets')];
      await redis.hset(previousRecord, 'keyId', 'k1', 'workspaceId', 'ws1', 'rolledAway', '1');
      const args = { previousHash: 'h-old', newHash: 'h-new', validUntil: '2030-01-01T00:00:00.000Z', keptUntilMs, atOnce: '0', ...fields };
      expect(await ROLL.eval(redis, { previousRecord, newRecord, secrets }, args)).toBe(1);
      expect(await redis.hgetall(newRecord)).toEqual({ keyId: 'k1', workspaceId: 'ws1' });
      expect(await redis.hgetall(previousRecord)).toEqual({
        keyId: 'k1',
        workspaceId: 'ws1',
        rolledAway: '1',
        expiresAt: '2030-01-01T00:00:00.000Z',
      });
      expect(await redis.pexpiretime(previousRecord)).toBe(keptUntilMs);
      expect((await redis.smembers(secrets)).sort()).toEqual(['h-new', 'h-old']);
    });

    it('at once: the old record and its secret are gone', async () => {
      const [previousRecord, newRecord, secrets] = [key('rec-old'), key('rec-new'), key('secrets')];
      await redis.hset(previousRecord, 'keyId', 'k1');
      await redis.sadd(secrets, 'h-old');
      const args = { previousHash: 'h-old', newHash: 'h-new', validUntil: '', keptUntilMs, atOnce: '1', ...fields };
      expect(await ROLL.eval(redis, { previousRecord, newRecord, secrets }, args)).toBe(1);
      expect(await redis.exists(previousRecord)).toBe(0);
      expect(await redis.hgetall(newRecord)).toEqual({ keyId: 'k1' });
      expect(await redis.smembers(secrets)).toEqual(['h-new']);
    });

    it('does nothing for a key that is already gone', async () => {
      const [previousRecord, newRecord, secrets] = [key('rec-old'), key('rec-new'), key('secrets')];
      const args = { previousHash: 'h-old', newHash: 'h-new', validUntil: '', keptUntilMs, atOnce: '0', ...fields };
      expect(await ROLL.eval(redis, { previousRecord, newRecord, secrets }, args)).toBe(0);
      expect(await redis.exists(previousRecord, newRecord, secrets)).toBe(0);
    });
  });

  describe('key index: a rolled key’s records', () => {
    it('delete-rolled deletes every record of the key, then its set of secrets', async () => {
      const [recordPrefix, secrets] = [key('rec') + ':', key('secrets')];
      await redis.hset(recordPrefix + 'h1', 'keyId', 'k1');
      await redis.hset(recordPrefix + 'h2', 'keyId', 'k1');
      await redis.hset(recordPrefix + 'other', 'keyId', 'k2');
      await redis.sadd(secrets, 'h1', 'h2', 'h-expired');
      expect(await DELETE_ROLLED.eval(redis, { secrets }, { recordPrefix })).toBe(1);
      expect(await redis.exists(recordPrefix + 'h1', recordPrefix + 'h2', secrets)).toBe(0);
      expect(await redis.hgetall(recordPrefix + 'other')).toEqual({ keyId: 'k2' });
    });

    it('set-on-rolled sets the field on every live record, and creates none for an expired secret', async () => {
      const [recordPrefix, secrets] = [key('rec') + ':', key('secrets')];
      await redis.hset(recordPrefix + 'h1', 'name', 'a');
      await redis.hset(recordPrefix + 'h2', 'name', 'a');
      await redis.sadd(secrets, 'h1', 'h2', 'h-expired');
      expect(await SET_ON_ROLLED.eval(redis, { secrets }, { recordPrefix, field: 'name', value: 'b' })).toBe(1);
      expect(await redis.hgetall(recordPrefix + 'h1')).toEqual({ name: 'b' });
      expect(await redis.hgetall(recordPrefix + 'h2')).toEqual({ name: 'b' });
      expect(await redis.exists(recordPrefix + 'h-expired')).toBe(0);
    });

    it('set-if-exists sets a field of a live record and never resurrects a deleted one', async () => {
      const [live, gone] = [key('rec'), key('rec')];
      await redis.hset(live, 'keyId', 'k1');
      await SET_IF_EXISTS.eval(redis, { record: live }, { value: '2030-01-01', field: 'lastUsed' });
      await SET_IF_EXISTS.eval(redis, { record: gone }, { value: '2030-01-01', field: 'lastUsed' });
      expect(await redis.hgetall(live)).toEqual({ keyId: 'k1', lastUsed: '2030-01-01' });
      expect(await redis.exists(gone)).toBe(0);
    });
  });

  describe('key index: lookup', () => {
    it('reads the record in the active generation, generation 0 when none is active, and nothing for an unknown hash', async () => {
      const ks = new Keyspace(key('ks') + ':');
      const index = new KeyIndex(redis, ks);
      await redis.hset(ks.rm('keys', '0', 'hash', 'abc'), 'keyId', 'in-0', 'workspaceId', 'w');
      await redis.hset(ks.rm('keys', '7', 'hash', 'abc'), 'keyId', 'in-7', 'workspaceId', 'w');
      await redis.hset(ks.rm('keys', '7', 'hash', 'new'), 'keyId', 'only-in-7', 'workspaceId', 'w');
      expect((await index.lookupHash('abc'))?.keyId).toBe('in-0');
      await redis.set(ks.active('keys'), '7');
      // A hash the generation last seen does not hold makes it read the pointer again at once.
      expect((await index.lookupHash('new'))?.keyId).toBe('only-in-7');
      expect((await index.lookupHash('abc'))?.keyId).toBe('in-7');
      expect(await index.lookupHash('unknown')).toBeNull();
      // A fresh lookup reads the active generation.
      expect((await new KeyIndex(redis, ks).lookupHash('abc'))?.keyId).toBe('in-7');
    });
  });

  describe('audit: merge key', () => {
    it("creates a missing key's entry and keeps the fields an empty argument leaves alone", async () => {
      const keys = key('audit-keys');
      expect(await MERGE_KEY.eval(redis, { keys }, { keyId: 'k1', name: 'first', last4: 'abcd' })).toBe(1);
      await MERGE_KEY.eval(redis, { keys }, { keyId: 'k1', name: 'renamed', last4: '' });
      expect(JSON.parse((await redis.hget(keys, 'k1'))!)).toEqual({ name: 'renamed', last4: 'abcd' });
      await MERGE_KEY.eval(redis, { keys }, { keyId: 'k1', name: '', last4: 'wxyz' });
      expect(JSON.parse((await redis.hget(keys, 'k1'))!)).toEqual({ name: 'renamed', last4: 'wxyz' });
      await MERGE_KEY.eval(redis, { keys }, { keyId: 'k2', name: '', last4: '' });
      expect(await redis.hget(keys, 'k2')).toBe('{}');
    });
  });

  describe('invitations: settle', () => {
    it('marks the invitation and takes it out of its e-mail’s and its workspace’s pending lists', async () => {
      const [invitation, pendingInWorkspace, emailPrefix] = [key('inv'), key('pending'), key('by-email') + ':'];
      await redis.hset(invitation, 'email', 'a@example.com', 'status', 'pending');
      await redis.hset(emailPrefix + 'a@example.com', 'i1', 'x', 'i2', 'y');
      await redis.hset(pendingInWorkspace, 'i1', 'x', 'i3', 'z');
      const args = { invitationId: 'i1', status: 'accepted', settled: '2030-01-01T00:00:00.000Z', emailPrefix };
      expect(await SETTLE.eval(redis, { invitation, pendingInWorkspace }, args)).toBe(1);
      expect(await redis.hgetall(invitation)).toEqual({ email: 'a@example.com', status: 'accepted', settled: '2030-01-01T00:00:00.000Z' });
      expect(await redis.hgetall(emailPrefix + 'a@example.com')).toEqual({ i2: 'y' });
      expect(await redis.hgetall(pendingInWorkspace)).toEqual({ i3: 'z' });
    });

    it('does nothing for an invitation it does not know (no e-mail in its hash)', async () => {
      const [invitation, pendingInWorkspace, emailPrefix] = [key('inv'), key('pending'), key('by-email') + ':'];
      await redis.hset(pendingInWorkspace, 'i1', 'x');
      const args = { invitationId: 'i1', status: 'revoked', settled: '2030-01-01T00:00:00.000Z', emailPrefix };
      expect(await SETTLE.eval(redis, { invitation, pendingInWorkspace }, args)).toBe(0);
      expect(await redis.exists(invitation)).toBe(0);
      expect(await redis.hgetall(pendingInWorkspace)).toEqual({ i1: 'x' });
    });
  });
});
