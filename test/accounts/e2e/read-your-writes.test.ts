import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { hashKey, KeyIndex } from '../../../src/accounts/projections/key-index/queries';
import { startTestServer, TestServer } from '../../support/harness';
import { uniquePrefix } from '../../support/redis';
import { addMember, api, createWorkspace, fund, newUser } from './helpers';

/**
 * The api and the projector as separate roles over one SQLite file and one Redis prefix, as in
 * production: the projector only sees an append when it next polls the store, so an answer that
 * did not wait for the projections would let the next request read stale state.
 */
let apiServer: TestServer;
let projector: TestServer;
let dataDir: string;

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'tollgate-ryw-'));
  const shared = { DATA_DIR: dataDir, REDIS_PREFIX: uniquePrefix() };
  projector = await startTestServer({ ...shared, ROLE: 'projector' });
  apiServer = await startTestServer({ ...shared, ROLE: 'api' });
});
afterAll(async () => {
  await apiServer?.close();
  await projector?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

test('a new key is in the key index, and a deleted one gone, as soon as the answer arrives', async () => {
  const ann = await newUser(apiServer, 'ann');
  const ws = await createWorkspace(apiServer, ann, 'RYW');
  await fund(apiServer, ws);
  const index = new KeyIndex(apiServer.services.redis, apiServer.services.ks);
  for (let i = 0; i < 5; i++) {
    const created = await api(apiServer)
      .post(`/v1/workspaces/${ws}/keys`)
      .set(ann.auth)
      .send({ name: `key ${i}` });
    expect(created.status).toBe(201);
    expect(await index.lookupHash(hashKey(created.body.secret))).not.toBeNull();
    await api(apiServer).delete(`/v1/workspaces/${ws}/keys/${created.body.keyId}`).set(ann.auth).expect(204);
    expect(await index.lookupHash(hashKey(created.body.secret))).toBeNull();
  }
});

test('membership changes and renames are seen by the very next request', async () => {
  const [ann, bob] = await Promise.all([newUser(apiServer, 'ann'), newUser(apiServer, 'bob')]);
  for (let i = 0; i < 3; i++) {
    const ws = await createWorkspace(apiServer, ann, `Team ${i}`);
    expect((await api(apiServer).get(`/v1/workspaces/${ws}`).set(ann.auth)).status).toBe(200);
    await api(apiServer)
      .patch(`/v1/workspaces/${ws}`)
      .set(ann.auth)
      .send({ name: `Renamed ${i}` })
      .expect(200);
    expect((await api(apiServer).get(`/v1/workspaces/${ws}`).set(ann.auth)).body.name).toBe(`Renamed ${i}`);
    await addMember(apiServer, ann, ws, bob); // invite → accept, each checked by the next request
    expect((await api(apiServer).get(`/v1/workspaces/${ws}`).set(bob.auth)).status).toBe(200);
    await api(apiServer).delete(`/v1/workspaces/${ws}/members/${bob.userId}`).set(ann.auth).expect(204);
    expect((await api(apiServer).get(`/v1/workspaces/${ws}`).set(bob.auth)).status).toBe(404);
  }
});
