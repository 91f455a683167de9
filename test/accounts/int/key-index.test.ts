import { randomUUID } from 'node:crypto';
import { streams } from '../../../src/platform/streams';
import { hotPathReadModels } from '../../support/hot-path';
import { hashKey, KeyIndex, LOOKUP } from '../../../src/accounts/projections/key-index/queries';
import { keyIndexParts } from '../../../src/accounts/projections/key-index/layout';
import { startTestServer, TestServer } from '../../support/harness';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({}, { modules: [hotPathReadModels] });
});
afterAll(() => server.close());

async function append(ws: string, type: string, data: Record<string, unknown>) {
  const s = server.services;
  const r = await s.store.append(streams.workspace(ws), [{ id: randomUUID(), type, data }], { expectedRevision: 'any' });
  await s.progress.waitFor(r.position, 5000);
}

describe('key index', () => {
  it('finds a created key by its secret, forgets it when deleted, and never resurrects it', async () => {
    const ws = randomUUID();
    const keyId = randomUUID();
    const secret = `tg_${randomUUID().replace(/-/g, '')}`;
    const keyHash = hashKey(secret);
    const index = new KeyIndex(server.services.redis, server.services.ks);
    expect(await index.lookup(secret)).toBeNull();

    await append(ws, 'ApiKeyCreated', {
      workspaceId: ws,
      keyId,
      name: 'prod',
      keyHash,
      prefix: secret.slice(0, 8),
      last4: secret.slice(-4),
      scopes: ['inference'],
      expiresAt: '2030-01-01T00:00:00.000Z',
      createdBy: 'u1',
    });
    expect(await index.lookup(secret)).toEqual({
      keyId,
      workspaceId: ws,
      name: 'prod',
      scopes: ['inference'],
      expiresAt: new Date('2030-01-01T00:00:00.000Z'),
      rateLimit: null,
    });

    await append(ws, 'RateLimitChanged', { workspaceId: ws, keyId, keyHash, requestsPerMinute: 500, by: 'op' });
    expect((await index.lookup(secret))?.rateLimit).toBe(500);

    await append(ws, 'ApiKeyDeleted', { workspaceId: ws, keyId, keyHash, by: 'u1' });
    expect(await index.lookup(secret)).toBeNull();
    await append(ws, 'RateLimitChanged', { workspaceId: ws, keyId, keyHash, requestsPerMinute: 900, by: 'op' });
    expect(await index.lookup(secret)).toBeNull();
  });

  it('maps both secrets of a rolled key to its id; rate limits and deletion reach both; no grace drops the old one', async () => {
    const ws = randomUUID();
    const keyId = randomUUID();
    const [s1, s2, s3] = [1, 2, 3].map(() => `tg_${randomUUID().replace(/-/g, '')}`);
    const index = new KeyIndex(server.services.redis, server.services.ks);
    await append(ws, 'ApiKeyCreated', {
      workspaceId: ws,
      keyId,
      name: 'prod',
      keyHash: hashKey(s1),
      prefix: s1.slice(0, 8),
      last4: s1.slice(-4),
      scopes: ['inference'],
      expiresAt: null,
      createdBy: 'u1',
    });
    const until = '2031-06-01T00:00:00.000Z';
    await append(ws, 'ApiKeyRolled', {
      workspaceId: ws,
      keyId,
      keyHash: hashKey(s2),
      prefix: s2.slice(0, 8),
      last4: s2.slice(-4),
      previousKeyHash: hashKey(s1),
      gracePeriodSeconds: 3600,
      previousKeyValidUntil: until,
      by: 'u1',
    });
    const base = { keyId, workspaceId: ws, name: 'prod', scopes: ['inference'], rateLimit: null };
    expect(await index.lookup(s2)).toEqual({ ...base, expiresAt: null });
    expect(await index.lookup(s1)).toEqual({ ...base, expiresAt: new Date(until), rolledAway: true });
    // The old secret's record goes away by itself a day after its grace period.
    const redis = server.services.redis;
    const oldKey = (await redis.keys(`${server.prefix}rm:{keys}:*:hash:${hashKey(s1)}`))[0];
    expect(await redis.pexpiretime(oldKey)).toBe(Date.parse(until) + 24 * 3600 * 1000);

    await append(ws, 'RateLimitChanged', { workspaceId: ws, keyId, keyHash: hashKey(s2), requestsPerMinute: 700, by: 'op' });
    expect((await index.lookup(s1))?.rateLimit).toBe(700);
    expect((await index.lookup(s2))?.rateLimit).toBe(700);

    await append(ws, 'ApiKeyRolled', {
      workspaceId: ws,
      keyId,
      keyHash: hashKey(s3),
      prefix: s3.slice(0, 8),
      last4: s3.slice(-4),
      previousKeyHash: hashKey(s2),
      gracePeriodSeconds: 0,
      previousKeyValidUntil: '2030-01-01T00:00:00.000Z',
      by: 'u1',
    });
    expect(await index.lookup(s2)).toBeNull();
    expect(await index.lookup(s3)).toEqual({ ...base, rateLimit: 700, expiresAt: null });
    expect((await index.lookup(s1))?.rolledAway).toBe(true);

    await append(ws, 'ApiKeyDeleted', { workspaceId: ws, keyId, keyHash: hashKey(s3), by: 'u1' });
    for (const s of [s1, s2, s3]) expect(await index.lookup(s)).toBeNull();
    expect(await redis.keys(`${server.prefix}rm:{keys}:*:key:${keyId}`)).toEqual([]);
  });

  it('a roll of a key that is already gone changes nothing', async () => {
    const ws = randomUUID();
    const keyId = randomUUID();
    const [s1, s2] = [1, 2].map(() => `tg_${randomUUID().replace(/-/g, '')}`);
    const index = new KeyIndex(server.services.redis, server.services.ks);
    await append(ws, 'ApiKeyRolled', {
      workspaceId: ws,
      keyId,
      keyHash: hashKey(s2),
      prefix: s2.slice(0, 8),
      last4: s2.slice(-4),
      previousKeyHash: hashKey(s1),
      gracePeriodSeconds: 60,
      previousKeyValidUntil: '2031-01-01T00:00:00.000Z',
      by: 'u1',
    });
    expect(await index.lookup(s1)).toBeNull();
    expect(await index.lookup(s2)).toBeNull();
  });
});

describe('the key lookup after a rebuild switched the generation', () => {
  // The lookup names the generation its cache last saw (a script on the key index's slot could not
  // read a pointer elsewhere on a Redis Cluster, and the cache saves a round trip); the lookup script
  // reads the pointer too, so a key is never found in a generation that is no longer active.
  it('finds nothing in the replaced generation while the cache still names it', async () => {
    const { redis, ks } = server.services;
    const hash = hashKey(`tg_${randomUUID().replace(/-/g, '')}`);
    const realActive = (await redis.get(ks.active('keys'))) ?? '0';
    // A clock that stands still: the cache would name the generation it saw first for ever.
    const index = new KeyIndex(redis, ks, () => 0);
    const old = `old-${randomUUID()}`;
    const fresh = `new-${randomUUID()}`;
    const recordIn = (gen: string) => ks.rm('keys', gen, ...keyIndexParts.record(hash));
    await redis.hset(recordIn(old), { keyId: 'k1', workspaceId: 'w1', name: 'n', scopes: 'inference' });
    try {
      await redis.set(ks.active('keys'), old);
      expect((await index.lookupHash(hash))?.keyId).toBe('k1');
      // A rebuild switches to a generation where the key was deleted; the replaced one still holds it.
      await redis.set(ks.active('keys'), fresh);
      expect(await index.lookupHash(hash)).toBeNull();
      // And a key only in the new generation is found at once, though the cache named the old one.
      await redis.hset(recordIn(fresh), { keyId: 'k2', workspaceId: 'w1', name: 'n', scopes: 'inference' });
      expect((await index.lookupHash(hash))?.keyId).toBe('k2');
    } finally {
      await redis.set(ks.active('keys'), realActive);
      await redis.del(recordIn(old), recordIn(fresh));
    }
  });

  it('the lookup script answers the active generation alone when the guess is stale', async () => {
    const { redis, ks } = server.services;
    const active = `${ks.prefix}lookup-test:{keys}:active`;
    const record = `${ks.prefix}lookup-test:{keys}:record`;
    const run = LOOKUP.bind(redis, 'tollgateKeyLookupTest');
    await redis.set(active, '7');
    await redis.hset(record, { keyId: 'k' });
    try {
      expect(await run({ active, record }, { gen: '6' })).toEqual(['7']);
      expect(await run({ active, record }, { gen: '7' })).toEqual(['7', ['keyId', 'k']]);
      await redis.del(active);
      expect(await run({ active, record }, { gen: '0' })).toEqual(['0', ['keyId', 'k']]);
    } finally {
      await redis.del(active, record);
    }
  });
});
