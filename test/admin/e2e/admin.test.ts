import { randomUUID } from 'node:crypto';
import { streams } from '../../../src/platform/streams';
import { getBalance } from '../../../src/billing/projections/balances/queries';
import { listProjections, rebuild, setRateLimit } from '../../../src/admin/schemas';
import { expectMatchesContract } from '../../support/contract';
import { startTestServer, TestServer } from '../../support/harness';
import { authHeaders, fund, seedKey } from '../../inference/int/support/seed';

const TOKEN = 'operator-token-0123456789';
let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({ ADMIN_TOKEN: TOKEN, SWEEPER_ENABLED: 'false' });
});
afterAll(() => server?.close());

const admin = (path: string, init: RequestInit = {}, token: string | null = TOKEN) =>
  fetch(server.url + path, {
    ...init,
    headers: { 'Content-Type': 'application/json', ...(token ? { Authorization: `Bearer ${token}` } : {}) },
  });

async function seedWorkspaceKey() {
  const workspaceId = randomUUID();
  await server.services.store.append(
    streams.workspace(workspaceId),
    [{ id: randomUUID(), type: 'WorkspaceCreated', data: { workspaceId, name: 'Ops', personal: false, createdBy: 'u1' } }],
    { expectedRevision: 'no_stream' },
  );
  const key = await seedKey(server.services, { workspaceId });
  await fund(server.services, workspaceId, { usd: '100' });
  return key;
}

describe('/admin', () => {
  test('without the operator token → 401; with a wrong one → 401', async () => {
    expect((await admin('/admin/projections', {}, null)).status).toBe(401);
    const wrong = await admin('/admin/projections', {}, 'operator-token-wrong-000000');
    expect(wrong.status).toBe(401);
    await expectMatchesContract(wrong.clone(), listProjections);
    expect(await wrong.json()).toEqual({ detail: expect.stringContaining('operator token') });
  });

  test('GET /admin/projections lists every projection with checkpoint, head and lag', async () => {
    const res = await admin('/admin/projections');
    expect(res.status).toBe(200);
    await expectMatchesContract(res.clone(), listProjections);
    const { projections } = (await res.json()) as { projections: Array<{ name: string; lag: string; head: string }> };
    expect(projections.map((p) => p.name)).toEqual(expect.arrayContaining(['keys', 'balances', 'memberships']));
    for (const p of projections) expect(p.lag).toMatch(/^\d+$/);
  });

  test('POST /admin/projections/:name/rebuild switches to a new generation with the same state; unknown names 404', async () => {
    const key = await seedWorkspaceKey();
    const before = await getBalance(server.services.readModels, key.workspaceId);
    const genBefore = await server.services.readModels.gen('balances');
    const res = await admin('/admin/projections/balances/rebuild', { method: 'POST' });
    expect(res.status).toBe(200);
    await expectMatchesContract(res.clone(), rebuild);
    const body = (await res.json()) as { generation: string; events: number };
    expect(body.generation).not.toBe(genBefore);
    expect(body.events).toBeGreaterThan(0);
    expect(await server.services.readModels.gen('balances')).toBe(body.generation);
    expect(await getBalance(server.services.readModels, key.workspaceId)).toEqual(before);
    const unknown = await admin('/admin/projections/nope/rebuild', { method: 'POST' });
    expect(unknown.status).toBe(404);
    await expectMatchesContract(unknown, rebuild);
  });

  test("PUT a key's rate limit: the next inference request is limited by it; null restores the default", async () => {
    const key = await seedWorkspaceKey();
    const path = `/admin/workspaces/${key.workspaceId}/keys/${key.keyId}/rate-limit`;
    const bad = await admin(path, { method: 'PUT', body: JSON.stringify({ requestsPerMinute: 0 }) });
    expect(bad.status).toBe(422);
    await expectMatchesContract(bad, setRateLimit);
    expect(
      (
        await admin(`/admin/workspaces/${key.workspaceId}/keys/${randomUUID()}/rate-limit`, {
          method: 'PUT',
          body: JSON.stringify({ requestsPerMinute: 5 }),
        })
      ).status,
    ).toBe(404);

    const ok = await admin(path, { method: 'PUT', body: JSON.stringify({ requestsPerMinute: 2 }) });
    expect(ok.status).toBe(200);
    expect(await expectMatchesContract(ok, setRateLimit)).toEqual({ keyId: key.keyId, requestsPerMinute: 2, overridden: true });
    const events = await server.services.store.readStream(streams.workspace(key.workspaceId));
    const changed = events.filter((e) => e.type === 'RateLimitChanged');
    expect(changed.map((e) => [e.data, e.metadata.actor])).toEqual([
      [{ workspaceId: key.workspaceId, keyId: key.keyId, keyHash: key.keyHash, requestsPerMinute: 2, by: 'operator' }, 'operator'],
    ]);

    const body = JSON.stringify({ context: [{ type: 'Human', text: 'hi' }], config: 'service_3_pi', max_tokens: 2 });
    const infer = () => fetch(`${server.url}/external/api/inference`, { method: 'POST', headers: authHeaders(key.secret), body });
    const first = await infer();
    expect(first.status).toBe(200);
    expect(first.headers.get('x-ratelimit-limit-requests')).toBe('2');
    expect((await infer()).status).toBe(200);
    expect((await infer()).status).toBe(429);

    const reset = await admin(path, { method: 'PUT', body: JSON.stringify({ requestsPerMinute: null }) });
    expect(await reset.json()).toEqual({ keyId: key.keyId, requestsPerMinute: 100, overridden: false });
    const after = await infer();
    expect(after.status).toBe(200);
    expect(after.headers.get('x-ratelimit-limit-requests')).toBe('100');
  });
});

test('/admin does not exist without ADMIN_TOKEN', async () => {
  const plain = await startTestServer({ SWEEPER_ENABLED: 'false' });
  try {
    const res = await fetch(`${plain.url}/admin/projections`, { headers: { Authorization: `Bearer ${TOKEN}` } });
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({ detail: 'Not Found' });
  } finally {
    await plain.close();
  }
});
