import { randomUUID } from 'node:crypto';
import { generateKeySecret } from '../../../src/accounts/key-secrets';
import { touchKeyLastUsed } from '../../../src/accounts/key-last-used';
import { streams } from '../../../src/platform/streams';
import { hashKey, KeyIndex } from '../../../src/accounts/projections/key-index/queries';
import { addMember, api, appendKey, createWorkspace, fund, newUser, teamFixture, TestUser } from './helpers';
import { POLICY_VERSION } from '../../support/policy';
import { expectMatchesContract } from '../../support/contract';
import { createKey as createKeyRoute, listKeys } from '../../../src/accounts/routes/key-schemas';

const t = teamFixture({ funded: true });
let keyIndex: KeyIndex;
beforeAll(() => {
  keyIndex = new KeyIndex(t.server.services.redis, t.server.services.ks);
});

const head = () => t.server.services.store.headPosition();
const createKey = (by: TestUser, ws: string, body: object) => api(t.server).post(`/v1/workspaces/${ws}/keys`).set(by.auth).send(body);

describe('POST /v1/workspaces/:ws/keys', () => {
  test('201 with the secret once; the key works on the next request; only its SHA-256 is stored', async () => {
    const res = await createKey(t.bob, t.team, { name: 'production' });
    expect(res.status).toBe(201);
    await expectMatchesContract(res, createKeyRoute);
    expect(res.headers['cache-control']).toBe('no-store');
    const { secret, keyId } = res.body;
    expect(secret).toMatch(/^tgk[0-9A-Za-z]{49}$/);
    expect(res.body).toEqual({
      keyId: expect.any(String),
      name: 'production',
      prefix: secret.slice(0, 8),
      last4: secret.slice(-4),
      scopes: ['inference'],
      expiresAt: null,
      created: expect.any(String),
      createdBy: { userId: t.bob.userId, name: t.bob.name },
      secret,
    });
    // The key index (what the inference auth reads) already has it.
    expect(await keyIndex.lookup(secret)).toEqual({
      keyId,
      workspaceId: t.team,
      name: 'production',
      scopes: ['inference'],
      expiresAt: null,
      rateLimit: null,
    });
    // The secret is nowhere: not in events, not in Redis.
    const events = await t.server.services.store.readAll();
    expect(JSON.stringify(events.map((e) => [e.data, e.metadata]))).not.toContain(secret);
    const created = events.find((e) => e.type === 'ApiKeyCreated' && (e.data as { keyId: string }).keyId === keyId)!;
    expect(created.stream).toBe(streams.workspace(t.team));
    expect((created.data as { keyHash: string }).keyHash).toBe(hashKey(secret));
    const { redis, prefix } = { redis: t.server.services.redis, prefix: t.server.prefix };
    const keys = await redis.keys(`${prefix}*`);
    for (const k of keys) {
      expect(k).not.toContain(secret);
      const type = await redis.type(k);
      const dump = type === 'hash' ? JSON.stringify(await redis.hgetall(k)) : type === 'string' ? await redis.get(k) : '';
      expect(dump ?? '').not.toContain(secret);
    }
    // Two keys never share a secret.
    const again = await createKey(t.bob, t.team, { name: 'production' });
    expect(again.body.secret).not.toBe(secret);
  });

  test('optional scopes and a future expiry are kept', async () => {
    const expiresAt = new Date(Date.now() + 86_400_000).toISOString();
    const res = await createKey(t.ann, t.team, { name: 'short-lived', scopes: ['inference'], expiresAt });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ scopes: ['inference'], expiresAt });
    expect((await keyIndex.lookup(res.body.secret))?.expiresAt).toEqual(new Date(expiresAt));
    const noScopes = await createKey(t.ann, t.team, { name: 'no scopes', scopes: [] });
    expect(noScopes.status).toBe(201);
    expect((await keyIndex.lookup(noScopes.body.secret))?.scopes).toEqual([]);
  });

  test('invalid names, scopes and expiries → 422 naming the field, nothing appended', async () => {
    const before = await head();
    const cases: [object, string][] = [
      [{ name: 'ab' }, 'name'],
      [{ name: '  ab  ' }, 'name'],
      [{ name: 'x'.repeat(65) }, 'name'],
      [{}, 'name'],
      [{ name: 'fine name', scopes: ['admin'] }, 'scopes'],
      [{ name: 'fine name', scopes: 'inference' }, 'scopes'],
      [{ name: 'fine name', expiresAt: 'tomorrow' }, 'expiresAt'],
      [{ name: 'fine name', expiresAt: new Date(Date.now() - 60_000).toISOString() }, 'expiresAt'],
    ];
    for (const [body, field] of cases) {
      const res = await createKey(t.ann, t.team, body);
      expect({ body, status: res.status }).toEqual({ body, status: 422 });
      expect(res.body.detail[0].loc[0]).toBe('body');
      expect(res.body.detail[0].loc[1]).toBe(field);
    }
    // Checked at the service's clock, beside the static contract, and answered as the schema answers.
    const past = await createKey(t.ann, t.team, { name: 'fine name', expiresAt: new Date(Date.now() - 60_000).toISOString() });
    expect(past.body).toEqual({ detail: [{ loc: ['body', 'expiresAt'], msg: 'expiresAt must lie in the future', type: 'custom' }] });
    expect(await head()).toBe(before);
  });

  test('an unfunded workspace → 402 saying what is missing, nothing appended', async () => {
    const ws = await createWorkspace(t.server, t.ann, 'Unfunded');
    const before = await head();
    const none = await createKey(t.ann, ws, { name: 'first key' });
    expect(none.status).toBe(402);
    expect(none.body.detail).toBe(
      'This workspace is not funded yet: no payment method is on file and deposits total 0 USD of the required 100 USD. ' +
        'Add a payment method and deposit at least 100 USD before creating API keys.',
    );
    expect(await head()).toBe(before);

    await fund(t.server, ws, { paymentMethod: true, depositUsd: 40 });
    const partial = await createKey(t.ann, ws, { name: 'first key' });
    expect(partial.status).toBe(402);
    expect(partial.body.detail).toMatch(/: deposits total 40 USD of the required 100 USD\./);
    expect(partial.body.detail).not.toMatch(/no payment method/);

    const ws2 = await createWorkspace(t.server, t.ann, 'Cash only');
    await fund(t.server, ws2, { paymentMethod: false, depositUsd: 100 });
    const noCard = await createKey(t.ann, ws2, { name: 'first key' });
    expect(noCard.status).toBe(402);
    expect(noCard.body.detail).toMatch(/: no payment method is on file\./);

    await fund(t.server, ws, { paymentMethod: false, depositUsd: 60 });
    expect((await createKey(t.ann, ws, { name: 'first key' })).status).toBe(201);
  });

  test('another workspace → 404; a removed member → 404; a logged-out session → 401', async () => {
    const before = await head();
    expect((await createKey(t.eve, t.team, { name: 'intruder' })).status).toBe(404);
    expect((await createKey(t.ann, t.eveWs, { name: 'intruder' })).status).toBe(404);
    const ws = await createWorkspace(t.server, t.ann, 'Short stay');
    await fund(t.server, ws);
    const carl = await newUser(t.server, 'carl');
    await addMember(t.server, t.ann, ws, carl);
    await api(t.server).delete(`/v1/workspaces/${ws}/members/${carl.userId}`).set(t.ann.auth).expect(204);
    const mid = await head();
    expect((await createKey(carl, ws, { name: 'after removal' })).status).toBe(404);
    await api(t.server).post('/v1/logout').set(carl.auth).expect(204);
    expect((await createKey(carl, carl.personalWs, { name: 'logged out' })).status).toBe(401);
    expect(await head()).toBe(mid);
    expect(mid).toBeGreaterThan(before);
  });
});

describe('GET /v1/workspaces/:ws/keys', () => {
  test('members list name, prefix, last 4, scopes, created, created by, expiry, last used — never the secret or hash', async () => {
    const ws = await createWorkspace(t.server, t.ann, 'Listing');
    await fund(t.server, ws);
    const carl = await newUser(t.server, 'carl');
    await addMember(t.server, t.ann, ws, carl);
    const k1 = (await createKey(t.ann, ws, { name: 'first' })).body;
    const k2 = (await createKey(carl, ws, { name: 'second' })).body;
    await touchKeyLastUsed(t.server.services.redis, t.server.services.ks, k1.keyId, '2030-01-01T00:00:00.000Z');
    const res = await api(t.server).get(`/v1/workspaces/${ws}/keys`).set(carl.auth);
    expect(res.status).toBe(200);
    expect(res.body.keys).toEqual([
      {
        keyId: k1.keyId,
        name: 'first',
        prefix: k1.prefix,
        last4: k1.last4,
        scopes: ['inference'],
        created: expect.any(String),
        createdBy: { userId: t.ann.userId, name: t.ann.name },
        expiresAt: null,
        expired: false,
        lastUsed: '2030-01-01T00:00:00.000Z',
        lastRoll: null,
        monthlyBudget: null,
        spendMonth: new Date().toISOString().slice(0, 7),
        monthToDateSpend: '0',
        budget: null,
        budgetPeriod: null,
        budgetPeriodId: null,
        budgetSpent: null,
        budgetResetsAt: null,
        budgetRemaining: null,
      },
      expect.objectContaining({ keyId: k2.keyId, name: 'second', createdBy: { userId: carl.userId, name: carl.name }, lastUsed: null }),
    ]);
    await expectMatchesContract(res, listKeys);
    const raw = JSON.stringify(res.body);
    for (const k of [k1, k2]) {
      expect(raw).not.toContain(k.secret);
      expect(raw).not.toContain(hashKey(k.secret));
    }
  });

  test('an expired key is listed as expired (and stays in the index for the inference auth to refuse)', async () => {
    const secret = generateKeySecret();
    const expiresAt = new Date(Date.now() - 3_600_000).toISOString();
    const keyId = await appendKey(t.server, t.team, t.ann.userId, { secret, name: 'old key', expiresAt });
    const res = await api(t.server).get(`/v1/workspaces/${t.team}/keys`).set(t.bob.auth);
    expect(res.body.keys.find((k: { keyId: string }) => k.keyId === keyId)).toMatchObject({ name: 'old key', expiresAt, expired: true });
    const rec = await keyIndex.lookup(secret);
    expect(rec?.expiresAt!.getTime()).toBeLessThan(Date.now());
  });

  test('an outsider → 404; no session → 401; each workspace lists only its own keys', async () => {
    expect((await api(t.server).get(`/v1/workspaces/${t.team}/keys`).set(t.eve.auth)).status).toBe(404);
    expect((await api(t.server).get(`/v1/workspaces/${t.team}/keys`)).status).toBe(401);
    const eveKey = (await createKey(t.eve, t.eveWs, { name: 'eve key' })).body;
    const teamKeys = (await api(t.server).get(`/v1/workspaces/${t.team}/keys`).set(t.ann.auth)).body.keys;
    expect(teamKeys.map((k: { keyId: string }) => k.keyId)).not.toContain(eveKey.keyId);
  });
});

describe('DELETE /v1/workspaces/:ws/keys/:keyId', () => {
  test('204; the key fails on the next request and leaves the list', async () => {
    const k = (await createKey(t.bob, t.team, { name: 'doomed' })).body;
    expect(await keyIndex.lookup(k.secret)).not.toBeNull();
    const res = await api(t.server).delete(`/v1/workspaces/${t.team}/keys/${k.keyId}`).set(t.bob.auth);
    expect(res.status).toBe(204);
    expect(await keyIndex.lookup(k.secret)).toBeNull();
    const list = await api(t.server).get(`/v1/workspaces/${t.team}/keys`).set(t.ann.auth);
    expect(list.body.keys.map((x: { keyId: string }) => x.keyId)).not.toContain(k.keyId);
    const events = await t.server.services.store.readStream(streams.workspace(t.team));
    expect(events.at(-1)).toMatchObject({ type: 'ApiKeyDeleted', data: { keyId: k.keyId, keyHash: hashKey(k.secret), by: t.bob.userId } });
    // Deleting again, or an unknown id: 404.
    const again = await api(t.server).delete(`/v1/workspaces/${t.team}/keys/${k.keyId}`).set(t.ann.auth);
    expect(again.status).toBe(404);
    expect(again.body).toEqual({ detail: 'API key not found' });
    expect((await api(t.server).delete(`/v1/workspaces/${t.team}/keys/${randomUUID()}`).set(t.ann.auth)).status).toBe(404);
  });

  test("another workspace's key id → 404 both ways, and the key keeps working", async () => {
    const eveKey = (await createKey(t.eve, t.eveWs, { name: 'eve key 2' })).body;
    const before = await head();
    // Through my own workspace…
    expect((await api(t.server).delete(`/v1/workspaces/${t.team}/keys/${eveKey.keyId}`).set(t.ann.auth)).status).toBe(404);
    // …or through hers.
    expect((await api(t.server).delete(`/v1/workspaces/${t.eveWs}/keys/${eveKey.keyId}`).set(t.ann.auth)).status).toBe(404);
    expect(await head()).toBe(before);
    expect(await keyIndex.lookup(eveKey.secret)).not.toBeNull();
  });

  test('a removed member cannot delete keys: 404 at once', async () => {
    const ws = await createWorkspace(t.server, t.ann, 'Delete after removal');
    await fund(t.server, ws);
    const carl = await newUser(t.server, 'carl');
    await addMember(t.server, t.ann, ws, carl);
    const k = (await createKey(carl, ws, { name: 'carl key' })).body;
    await api(t.server).delete(`/v1/workspaces/${ws}/members/${carl.userId}`).set(t.ann.auth).expect(204);
    expect((await api(t.server).delete(`/v1/workspaces/${ws}/keys/${k.keyId}`).set(carl.auth)).status).toBe(404);
    // Keys belong to the workspace, not to whoever created them.
    expect(await keyIndex.lookup(k.secret)).not.toBeNull();
  });
});

test('the whole path: signup → login → workspace → funded → key → key index', async () => {
  const email = `path-${randomUUID().slice(0, 8)}@example.com`;
  await api(t.server)
    .post('/v1/signup')
    .send({ email, password: 'a long password', name: 'Path', acceptedPolicyVersion: POLICY_VERSION })
    .expect(201);
  const token = (await api(t.server).post('/v1/login').send({ email, password: 'a long password' }).expect(200)).body.sessionToken;
  const auth = { Authorization: `Bearer ${token}` };
  const ws = (await api(t.server).post('/v1/workspaces').set(auth).send({ name: 'Path Co' }).expect(201)).body.workspaceId;
  await api(t.server).post(`/v1/workspaces/${ws}/keys`).set(auth).send({ name: 'first' }).expect(402);
  await fund(t.server, ws);
  const { secret } = (await api(t.server).post(`/v1/workspaces/${ws}/keys`).set(auth).send({ name: 'first' }).expect(201)).body;
  expect((await keyIndex.lookup(secret))?.workspaceId).toBe(ws);
});
