import { randomUUID } from 'node:crypto';
import { streams } from '../../../src/domain/streams';
import { coreReadModels } from '../../../src/projections/core-module';
import { hashKey, KeyIndex } from '../../../src/projections/key-index/queries';
import { startTestServer, TestServer } from '../../support/harness';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({}, { modules: [coreReadModels] });
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
      workspaceId: ws, keyId, name: 'prod', keyHash, prefix: secret.slice(0, 8), last4: secret.slice(-4),
      scopes: ['inference'], expiresAt: '2030-01-01T00:00:00.000Z', createdBy: 'u1',
    });
    expect(await index.lookup(secret)).toEqual({
      keyId, workspaceId: ws, name: 'prod', scopes: ['inference'], expiresAt: new Date('2030-01-01T00:00:00.000Z'), rateLimit: null,
    });

    await append(ws, 'RateLimitChanged', { workspaceId: ws, keyId, keyHash, requestsPerMinute: 500, by: 'op' });
    expect((await index.lookup(secret))?.rateLimit).toBe(500);

    await append(ws, 'ApiKeyDeleted', { workspaceId: ws, keyId, keyHash, by: 'u1' });
    expect(await index.lookup(secret)).toBeNull();
    await append(ws, 'RateLimitChanged', { workspaceId: ws, keyId, keyHash, requestsPerMinute: 900, by: 'op' });
    expect(await index.lookup(secret)).toBeNull();
  });
});
