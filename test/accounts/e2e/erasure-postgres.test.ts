import { Client } from 'pg';
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

    const c = new Client({ connectionString: db.url });
    await c.connect();
    try {
      const tables = (await c.query<{ t: string }>("SELECT tablename AS t FROM pg_tables WHERE schemaname = 'public'")).rows.map(
        (r) => r.t,
      );
      expect(tables).toEqual(expect.arrayContaining(['tollgate_events', 'tollgate_data_keys']));
      const found: Record<string, number> = {};
      for (const needle of [alice.email, alice.name, reg.body.secret as string]) {
        let n = 0;
        for (const t of tables)
          n += Number((await c.query(`SELECT count(*) AS n FROM ${t} x WHERE x::text LIKE '%' || $1 || '%'`, [needle])).rows[0].n);
        found[needle] = n;
      }
      expect(found).toEqual({ [alice.email]: 0, [alice.name]: 0, [reg.body.secret]: 0 });
    } finally {
      await c.end();
    }
    const v = await verifyLedger(s.services.store, s.services.redis, s.services.ks);
    expect(v.differences).toEqual([]);
  },
);
