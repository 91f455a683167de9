import { hashKey } from '../../../src/accounts/projections/key-index/queries';
import { streams } from '../../../src/platform/streams';
import { api, appendKey, teamFixture, TestUser } from './helpers';
import { expectMatchesContract } from '../../support/contract';
import { rollKey } from '../../../src/accounts/routes/key-schemas';

const t = teamFixture({ funded: true });

const head = () => t.server.services.store.headPosition();
const createKey = async (by: TestUser, ws: string, body: object) => {
  const res = await api(t.server).post(`/v1/workspaces/${ws}/keys`).set(by.auth).send(body);
  if (res.status !== 201) throw new Error(`create key: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body as { keyId: string; secret: string; prefix: string; last4: string };
};
const roll = (by: TestUser, ws: string, keyId: string, body?: object) => {
  const req = api(t.server).post(`/v1/workspaces/${ws}/keys/${keyId}/roll`).set(by.auth);
  return body === undefined ? req : req.send(body);
};
const infer = (secret: string) =>
  api(t.server)
    .post('/external/api/inference')
    .set('Authorization', `Bearer ${secret}`)
    .send({ context: [{ type: 'Human', text: 'Hello' }], config: 'service_3_pi', max_tokens: 4 });

describe('POST /v1/workspaces/:ws/keys/:keyId/roll', () => {
  test('without a grace period: a new secret for the same key; the old secret fails on the next request', async () => {
    const key = await createKey(t.bob, t.team, { name: 'leaky key', scopes: ['inference'] });
    expect((await infer(key.secret)).status).toBe(200);

    const res = await roll(t.bob, t.team, key.keyId);
    expect(res.status).toBe(200);
    await expectMatchesContract(res, rollKey);
    expect(res.headers['cache-control']).toBe('no-store');
    const { secret } = res.body;
    expect(secret).not.toBe(key.secret);
    expect(secret.slice(0, 3)).toBe(key.secret.slice(0, 3));
    expect(secret).toHaveLength(key.secret.length);
    expect(res.body).toEqual({
      keyId: key.keyId,
      name: 'leaky key',
      scopes: ['inference'],
      expiresAt: null,
      prefix: secret.slice(0, 8),
      last4: secret.slice(-4),
      rolledAt: expect.any(String),
      gracePeriodSeconds: 0,
      previousSecretValidUntil: res.body.rolledAt,
      secret,
    });

    const old = await infer(key.secret);
    expect(old.status).toBe(401);
    expect(old.body.detail).toBe('Invalid API key');
    expect((await infer(secret)).status).toBe(200);

    // One event, with hashes only; the key list shows the new secret's prefix under the same id.
    const events = (await t.server.services.store.readStream(streams.workspace(t.team))).filter((e) => e.type === 'ApiKeyRolled');
    expect(events.map((e) => e.data)).toEqual([
      {
        workspaceId: t.team,
        keyId: key.keyId,
        keyHash: hashKey(secret),
        prefix: secret.slice(0, 8),
        last4: secret.slice(-4),
        previousKeyHash: hashKey(key.secret),
        gracePeriodSeconds: 0,
        previousKeyValidUntil: res.body.rolledAt,
        by: t.bob.userId,
      },
    ]);
    expect(events[0].metadata.actor).toBe(t.bob.userId);
    const all = JSON.stringify((await t.server.services.store.readAll()).map((e) => [e.data, e.metadata]));
    expect(all).not.toContain(secret);
    const list = await api(t.server).get(`/v1/workspaces/${t.team}/keys`).set(t.ann.auth);
    const listed = list.body.keys.find((k: { keyId: string }) => k.keyId === key.keyId);
    expect(listed).toMatchObject({
      name: 'leaky key',
      prefix: secret.slice(0, 8),
      last4: secret.slice(-4),
      lastRoll: {
        prefix: secret.slice(0, 8),
        last4: secret.slice(-4),
        rolledAt: expect.any(String),
        previousSecretValidUntil: res.body.rolledAt,
      },
    });
    expect(list.body.keys.filter((k: { name: string }) => k.name === 'leaky key')).toHaveLength(1);
  });

  test('with a grace period both secrets work, every request is billed to the one key id, and the old one stops when it ends', async () => {
    const key = await createKey(t.bob, t.team, { name: 'graceful' });
    const res = await roll(t.ann, t.team, key.keyId, { gracePeriodSeconds: 2 });
    expect(res.status).toBe(200);
    const until = Date.parse(res.body.previousSecretValidUntil);
    expect(until - Date.parse(res.body.rolledAt)).toBe(2000);
    const [a, b] = [await infer(key.secret), await infer(res.body.secret)];
    expect([a.status, b.status]).toEqual([200, 200]);

    const requested = (await t.server.services.store.readAll())
      .filter((e) => e.type === 'InferenceRequested' && (e.data as { workspaceId: string }).workspaceId === t.team)
      .slice(-2);
    expect(requested.map((e) => (e.data as { keyId: string }).keyId)).toEqual([key.keyId, key.keyId]);
    const usage = await api(t.server).get(`/v1/workspaces/${t.team}/usage?granularity=day&groupBy=key`).set(t.ann.auth);
    expect(usage.status).toBe(200);
    expect(JSON.stringify(usage.body)).toContain(key.keyId);

    await new Promise((r) => setTimeout(r, Math.max(0, until - Date.now()) + 20));
    const old = await infer(key.secret);
    expect(old.status).toBe(401);
    expect(old.body.detail).toBe('Invalid API key: this secret was replaced when the key was rolled');
    expect((await infer(res.body.secret)).status).toBe(200);
  });

  test('deleting a rolled key stops its previous secret too, even inside the grace period', async () => {
    const key = await createKey(t.bob, t.team, { name: 'short lived' });
    const rolled = await roll(t.bob, t.team, key.keyId, { gracePeriodSeconds: 3600 });
    expect((await infer(key.secret)).status).toBe(200);
    await api(t.server).delete(`/v1/workspaces/${t.team}/keys/${key.keyId}`).set(t.bob.auth).expect(204);
    expect((await infer(key.secret)).status).toBe(401);
    expect((await infer(rolled.body.secret)).status).toBe(401);
  });

  test('rolling twice keeps each previous secret to its own grace period', async () => {
    const key = await createKey(t.ann, t.team, { name: 'twice' });
    const first = await roll(t.ann, t.team, key.keyId, { gracePeriodSeconds: 3600 });
    const second = await roll(t.ann, t.team, key.keyId, { gracePeriodSeconds: 0 });
    expect(second.status).toBe(200);
    // The first secret keeps its hour; the second stopped at once; the third works.
    expect((await infer(key.secret)).status).toBe(200);
    expect((await infer(first.body.secret)).status).toBe(401);
    expect((await infer(second.body.secret)).status).toBe(200);
  });

  test('the body is optional: no body means no grace period', async () => {
    const key = await createKey(t.ann, t.team, { name: 'no body' });
    const res = await api(t.server).post(`/v1/workspaces/${t.team}/keys/${key.keyId}/roll`).set(t.ann.auth);
    expect(res.status).toBe(200);
    expect(res.body.gracePeriodSeconds).toBe(0);
    expect((await infer(key.secret)).status).toBe(401);
  });
});

describe('refusals append nothing', () => {
  let key: { keyId: string; secret: string };
  beforeAll(async () => {
    key = await createKey(t.ann, t.team, { name: 'target' });
  });

  test.each([
    ['negative', -1, 'gracePeriodSeconds must be at least 0'],
    ['over 24 hours', 86_401, 'gracePeriodSeconds must be at most 86400 (24 hours)'],
    ['fractional', 1.5, 'gracePeriodSeconds must be a whole number of seconds from 0 to 86400'],
    ['a string', '60', 'gracePeriodSeconds must be a whole number of seconds from 0 to 86400'],
    ['null', null, 'gracePeriodSeconds must be a whole number of seconds from 0 to 86400'],
  ])('a grace period that is %s → 422 naming the field', async (_what, grace, msg) => {
    const before = await head();
    const res = await roll(t.ann, t.team, key.keyId, { gracePeriodSeconds: grace });
    expect(res.status).toBe(422);
    expect(res.body.detail).toEqual([expect.objectContaining({ loc: ['body', 'gracePeriodSeconds'], msg })]);
    expect(await head()).toBe(before);
    expect((await infer(key.secret)).status).toBe(200);
  });

  test('86400 exactly is accepted', async () => {
    const k = await createKey(t.ann, t.team, { name: 'day long' });
    const res = await roll(t.ann, t.team, k.keyId, { gracePeriodSeconds: 86_400 });
    expect(res.status).toBe(200);
    expect(Date.parse(res.body.previousSecretValidUntil) - Date.parse(res.body.rolledAt)).toBe(86_400_000);
  });

  test('a non-member → 404 Workspace not found', async () => {
    const before = await head();
    const res = await roll(t.eve, t.team, key.keyId, { gracePeriodSeconds: 60 });
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ detail: 'Workspace not found' });
    expect(await head()).toBe(before);
  });

  test("another workspace's key, through a workspace the user belongs to → 404 API key not found", async () => {
    const before = await head();
    const res = await roll(t.eve, t.eveWs, key.keyId);
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ detail: 'API key not found' });
    expect(await head()).toBe(before);
    expect((await infer(key.secret)).status).toBe(200);
  });

  test('a deleted key, or an unknown one → 404', async () => {
    const gone = await createKey(t.ann, t.team, { name: 'deleted' });
    await api(t.server).delete(`/v1/workspaces/${t.team}/keys/${gone.keyId}`).set(t.ann.auth).expect(204);
    const before = await head();
    for (const id of [gone.keyId, '00000000-0000-4000-8000-000000000000']) {
      const res = await roll(t.ann, t.team, id);
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ detail: 'API key not found' });
    }
    expect(await head()).toBe(before);
  });

  test('an expired key → 409: create a new one instead', async () => {
    const keyId = await appendKey(t.server, t.team, t.ann.userId, {
      secret: `tg_${'x'.repeat(48)}`,
      expiresAt: '2020-01-01T00:00:00.000Z',
    });
    const before = await head();
    const res = await roll(t.ann, t.team, keyId);
    expect(res.status).toBe(409);
    expect(res.body.detail).toMatch(/expired/);
    expect(await head()).toBe(before);
  });

  test('without a session → 401', async () => {
    const res = await api(t.server).post(`/v1/workspaces/${t.team}/keys/${key.keyId}/roll`).send({});
    expect(res.status).toBe(401);
  });
});

describe('what a roll keeps', () => {
  test("the key's budget, its name after a rename (for both secrets), and the audit log shows the roll", async () => {
    const { KeyIndex } = await import('../../../src/accounts/projections/key-index/queries');
    const index = new KeyIndex(t.server.services.redis, t.server.services.ks);
    const key = await createKey(t.ann, t.team, { name: 'budgeted' });
    await api(t.server).patch(`/v1/workspaces/${t.team}/keys/${key.keyId}`).set(t.ann.auth).send({ monthlyBudget: '25' }).expect(200);
    const rolled = await roll(t.ann, t.team, key.keyId, { gracePeriodSeconds: 600 });
    expect(rolled.status).toBe(200);
    const list = await api(t.server).get(`/v1/workspaces/${t.team}/keys`).set(t.ann.auth);
    expect(list.body.keys.find((k: { keyId: string }) => k.keyId === key.keyId)).toMatchObject({
      name: 'budgeted',
      monthlyBudget: '25',
      last4: rolled.body.secret.slice(-4),
    });

    await api(t.server)
      .patch(`/v1/workspaces/${t.team}/keys/${key.keyId}`)
      .set(t.ann.auth)
      .send({ name: 'renamed after roll' })
      .expect(200);
    expect((await index.lookup(rolled.body.secret))?.name).toBe('renamed after roll');
    expect((await index.lookup(key.secret))?.name).toBe('renamed after roll');

    const audit = await api(t.server).get(`/v1/workspaces/${t.team}/audit`).set(t.ann.auth);
    expect(audit.status).toBe(200);
    const entry = audit.body.entries.find(
      (e: { action: string; target: { id: string } }) => e.action === 'key.rolled' && e.target.id === key.keyId,
    );
    expect(entry).toMatchObject({
      actor: { userId: t.ann.userId },
      details: { gracePeriodSeconds: 600 },
      target: { last4: rolled.body.secret.slice(-4) },
    });
  });
});
