import { countInPostgres } from '../../support/raw-store';
import { verifyLedger } from '../../../src/cli/ledger';
import { createTestDatabase, TEST_DATABASE_URL, type TestDatabase } from '../../support/postgres';
import { startTestServer, TestServer } from '../../support/harness';
import { addMember, api, createWorkspace, fund, newUser, PASSWORD } from './helpers';

/** The proof of erasure on PostgreSQL: no e-mail, name or webhook secret in any row of any table. Runs when TEST_DATABASE_URL is set. */
const maybe = TEST_DATABASE_URL ? test : test.skip;
let db: TestDatabase | undefined;
let server: TestServer | undefined;
afterAll(async () => {
  await server?.close();
  await db?.drop();
});

maybe(
  'erasing a user leaves 0 matches of their e-mail, name or the webhook secrets in the PostgreSQL tables; the ledger still verifies',
  async () => {
    db = await createTestDatabase('erasure');
    server = await startTestServer({ EVENT_STORE: 'postgres', DATABASE_URL: db.url, WEBHOOKS_ALLOW_PRIVATE_TARGETS: 'true' });
    const s = server;
    const alice = await newUser(s, 'zeldapg');
    const bob = await newUser(s, 'bob');
    const team = await createWorkspace(s, bob, 'Bob team');
    await addMember(s, bob, team, alice);
    await fund(s, alice.personalWs);
    expect((await api(s).post(`/v1/workspaces/${alice.personalWs}/keys`).set(alice.auth).send({ name: 'erasure key' })).status).toBe(201);
    const reg = await api(s)
      .post(`/v1/workspaces/${alice.personalWs}/webhooks`)
      .set(alice.auth)
      .send({ url: 'http://127.0.0.1:9/hook', eventTypes: ['key.created'] });
    expect(reg.status).toBe(201);
    expect((await api(s).delete('/v1/me').set(alice.auth).send({ password: PASSWORD })).status).toBe(204);

    // Every row of every table, and the raw pages of the events table and its indexes (old row versions too).
    const needles = [alice.email, alice.name, reg.body.secret as string];
    expect(await countInPostgres(db.url, needles)).toEqual([0, 0, 0]);
    const v = await verifyLedger(s.services.store, s.services.redis, s.services.ks);
    expect(v.differences).toEqual([]);
  },
);
