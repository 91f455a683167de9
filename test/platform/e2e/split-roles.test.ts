import { randomBytes } from 'node:crypto';
/**
 * The scale-out deployment, for real: two api processes on two ports, one projector and one worker,
 * each `start()`ed in a process of its own over one PostgreSQL event store (a database of its own)
 * and one Redis (a prefix of its own), with Stripe in Stripe mode against the local Stripe-wire
 * server. Runs when TEST_DATABASE_URL is set.
 *
 * Prices are raised (0.001 USD per input token, 0.005 per output token) so that a 10 USD deposit is a
 * small balance: one request costs about 0.1 USD.
 */
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { streams } from '../../../src/platform/streams';
import { PostgresEventStore } from '../../../src/platform/eventstore/postgres';
import { getBalance } from '../../../src/billing/projections/balances/queries';
import { Keyspace } from '../../../src/platform/projections/keyspace';
import { ReadModels } from '../../../src/platform/projections/read-models';
import { bundleChild, Child } from '../../support/child-process';
import { startTestServer, TestServer } from '../../support/harness';
import { createTestDatabase, TEST_DATABASE_URL, TestDatabase } from '../../support/postgres';
import { cleanupPrefix, TEST_REDIS_URL, uniquePrefix } from '../../support/redis';
import { StripeWireServer } from '../../support/stripe-server';
import { api, attach, deposit, newUser, TestUser } from '../../billing/e2e/helpers';
import { patience } from '../../support/wait';

const maybe = TEST_DATABASE_URL ? describe : describe.skip;

jest.setTimeout(120_000);

const ADMIN_TOKEN = 'split-roles-admin-token-0123456789';
const BODY = JSON.stringify({ context: [{ type: 'Human', text: 'Say hello.' }], config: 'service_3_pi', max_tokens: 16 });

maybe('split roles over PostgreSQL and one Redis', () => {
  let db: TestDatabase;
  let stripe: StripeWireServer;
  let child: { args: string[]; dispose(): void };
  let env: Record<string, string>;
  const prefix = uniquePrefix('test');
  const children = new Set<Child>();
  let apiA: string;
  let apiB: string;
  let projector: Child;
  let store: PostgresEventStore;
  let redis: Redis;
  let rm: ReadModels;
  /**
   * The helpers take a TestServer: they need its url, and its config for the usage-policy version a
   * signup accepts (the children run the default policy, as does an empty config).
   */
  const at = (url: string) => ({ url, services: { config: {} } }) as unknown as TestServer;
  const A = () => at(apiA);

  function spawnRole(role: string): Child {
    const c = new Child(child.args, { ...env, ROLE: role });
    children.add(c);
    void c.exited.then(() => children.delete(c));
    return c;
  }
  async function startRole(role: string): Promise<{ child: Child; url: string }> {
    const c = spawnRole(role);
    // A limit for a child that never starts: four start together, and at load 40 on 2 cores that
    // took more than the 60 s this was.
    const [, port] = await c.waitFor(/^ready (\S+)/, 240_000);
    return { child: c, url: `http://127.0.0.1:${port}` };
  }

  const masterKey = randomBytes(32).toString('base64');

  beforeAll(async () => {
    child = bundleChild(join(__dirname, 'support', 'role-child.ts'));
    [db, stripe] = await Promise.all([createTestDatabase('split'), new StripeWireServer().start()]);
    env = {
      EVENT_STORE: 'postgres',
      DATABASE_URL: db.url,
      // One master key for every role and the replay below: each unwraps the data keys the others made.
      MASTER_KEY: masterKey,
      REDIS_URL: TEST_REDIS_URL,
      REDIS_PREFIX: prefix,
      HOST: '127.0.0.1',
      PORT: '0',
      NODE_ENV: 'test',
      LOG_LEVEL: 'error',
      ADMIN_TOKEN,
      STRIPE_SECRET_KEY: 'sk_test_split_roles',
      STRIPE_API_URL: stripe.url,
      STRIPE_MAX_NETWORK_RETRIES: '2',
      INITIAL_DEPOSIT_USD: '10',
      MIN_DEPOSIT_USD: '10',
      PRICE_INPUT_NANO_USD_PER_TOKEN: '1000000',
      PRICE_OUTPUT_NANO_USD_PER_TOKEN: '5000000',
      RATE_LIMIT_PER_MINUTE: '100',
    };
    // The projector first: it creates the schema (the others would wait on the same lock anyway).
    projector = (await startRole('projector')).child;
    const [a, b] = await Promise.all([startRole('api'), startRole('api'), startRole('worker')]);
    apiA = a.url;
    apiB = b.url;
    store = new PostgresEventStore({ connectionString: db.url });
    redis = new Redis(TEST_REDIS_URL);
    rm = new ReadModels(redis, new Keyspace(prefix));
  }, 600_000);

  afterAll(async () => {
    await Promise.all([...children].map((c) => c.kill('SIGTERM')));
    redis?.disconnect();
    await store?.close();
    await stripe?.close();
    await db?.drop();
    await cleanupPrefix(TEST_REDIS_URL, prefix);
    child?.dispose();
  });

  /** A user whose personal workspace has a card and `usd` deposited (through api A). */
  async function funded(label: string, usd: string): Promise<TestUser> {
    const u = await newUser(A(), label);
    expect((await attach(A(), u, u.personalWs)).status).toBe(200);
    const d = await deposit(A(), u, u.personalWs, usd);
    expect(d.status).toBe(201);
    return u;
  }
  async function createKey(u: TestUser, via: string): Promise<{ keyId: string; secret: string }> {
    const r = await api(at(via)).post(`/v1/workspaces/${u.personalWs}/keys`).set(u.auth).send({ name: 'split' });
    expect(r.status).toBe(201);
    return r.body;
  }
  const infer = async (base: string, secret: string) => {
    const res = await fetch(`${base}/external/api/inference`, {
      method: 'POST',
      headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
      body: BODY,
    });
    await res.arrayBuffer();
    return { status: res.status, requestId: res.headers.get('x-request-id') };
  };
  const debitsOf = async (ws: string) =>
    (await store.readAll()).filter((e) => e.type === 'TokensDebited' && (e.data as { workspaceId: string }).workspaceId === ws);

  test('a key created through api A works at once on api B', async () => {
    const u = await funded('keys', '10');
    const key = await createKey(u, apiA);
    expect((await infer(apiB, key.secret)).status).toBe(200);
    // And a key deleted through B stops working at once on A.
    const del = await api(at(apiB)).delete(`/v1/workspaces/${u.personalWs}/keys/${key.keyId}`).set(u.auth);
    expect(del.status).toBe(204);
    expect((await infer(apiA, key.secret)).status).toBe(401);
  });

  test('the rate limit is shared: the 101st request within the minute, over both apis, gets 429', async () => {
    const u = await funded('limit', '100');
    const key = await createKey(u, apiB);
    const first = await Promise.all(Array.from({ length: 100 }, (_, i) => infer(i % 2 ? apiA : apiB, key.secret)));
    expect(first.filter((r) => r.status !== 200)).toEqual([]);
    const [onA, onB] = await Promise.all([infer(apiA, key.secret), infer(apiB, key.secret)]);
    expect([onA.status, onB.status]).toEqual([429, 429]);
  });

  test(
    '200 concurrent requests over both apis on a small balance, the projector SIGKILLed mid-load: never below zero, ' +
      'debits = the drop, balances equal a replay, and the auto-reload the worker charges happens exactly once',
    async () => {
      const u = await funded('load', '10');
      const key = await createKey(u, apiA);
      const ws = u.personalWs;
      const raise = await api(at(apiB))
        .put(`/admin/workspaces/${ws}/keys/${key.keyId}/rate-limit`)
        .set('Authorization', `Bearer ${ADMIN_TOKEN}`)
        .send({ requestsPerMinute: 100_000 });
      expect(raise.status).toBe(200);
      // A second workspace with auto-reload: below 9.9 USD it reloads 10 USD, charged by the worker.
      const r = await funded('reload', '10');
      const rkey = await createKey(r, apiB);
      const conf = await api(A())
        .put(`/v1/workspaces/${r.personalWs}/billing/auto-reload`)
        .set(r.auth)
        .send({ enabled: true, threshold: '9.9', amount: '10' });
      expect(conf.status).toBe(200);
      const initial = (await getBalance(rm, ws)).balance;

      let lowest = initial;
      let watching = true;
      const watcher = (async () => {
        while (watching) {
          const b = (await getBalance(rm, ws)).balance;
          if (b < lowest) lowest = b;
          await new Promise((res) => setTimeout(res, 5));
        }
      })();

      let done = 0;
      let killed: Promise<void> | null = null;
      const load = Promise.all(
        Array.from({ length: 200 }, async (_, i) => {
          const res = await infer(i % 2 ? apiA : apiB, key.secret);
          if (++done === 50) killed = projector.kill('SIGKILL');
          return res;
        }),
      );
      // Meanwhile the reload workspace spends: one request takes it below the threshold.
      const reloadLoad = Promise.all(Array.from({ length: 6 }, (_, i) => infer(i % 2 ? apiA : apiB, rkey.secret)));
      const results = await load;
      const reloadResults = await reloadLoad;
      expect(killed).not.toBeNull();
      await killed;
      projector = (await startRole('projector')).child;

      // The restarted projector catches up with the whole store.
      const okIds = results.filter((x) => x.status === 200).map((x) => x.requestId!);
      const refused = results.filter((x) => x.status === 402);
      expect(okIds.length + refused.length).toBe(200);
      expect(okIds.length).toBeGreaterThan(20);
      expect(refused.length).toBeGreaterThan(0);
      expect(reloadResults.every((x) => x.status === 200)).toBe(true);

      const debits = await debitsOf(ws);
      expect(debits.map((e) => (e.data as { requestId: string }).requestId).sort()).toEqual([...okIds].sort());
      const debited = debits.reduce((sum, e) => sum + BigInt((e.data as { amountNanoUsd: string }).amountNanoUsd), 0n);

      const reloadTypes = async () => (await store.readStream(streams.billing(r.personalWs))).map((e) => e.type);
      const deadline = Date.now() + 30_000;
      let final = await getBalance(rm, ws);
      while ((final.balance !== initial - debited || !(await reloadTypes()).includes('AutoReloadSucceeded')) && Date.now() < deadline) {
        await new Promise((res) => setTimeout(res, 100));
        final = await getBalance(rm, ws);
      }
      watching = false;
      await watcher;
      console.log(
        `split roles: ${okIds.length} of 200 served, ${refused.length} refused (402); balance ${initial} → ${final.balance} nano-USD, ` +
          `lowest seen ${lowest}; projector SIGKILLed after ${50} replies and restarted`,
      );
      expect(lowest).toBeGreaterThanOrEqual(0n);
      expect(final.balance).toBeGreaterThanOrEqual(0n);
      expect(initial - final.balance).toBe(debited);

      // Exactly one reload: one trigger, one success, one charge at Stripe for 10 USD.
      await new Promise((res) => setTimeout(res, 1_000));
      const types = await reloadTypes();
      expect(types.filter((t) => t === 'AutoReloadTriggered')).toHaveLength(1);
      expect(types.filter((t) => t === 'AutoReloadSucceeded')).toHaveLength(1);
      const charges = [...stripe.paymentIntents.values()].filter(
        (pi) => pi.metadata.workspace_id === r.personalWs && pi.metadata.tollgate_kind !== 'deposit' && pi.status === 'succeeded',
      );
      expect(charges.map((pi) => pi.amount)).toEqual([1000]);

      // A from-scratch replay of the store (a projector of its own, in another prefix) agrees.
      const replay = await startTestServer({ ROLE: 'projector', EVENT_STORE: 'postgres', DATABASE_URL: db.url, MASTER_KEY: masterKey });
      try {
        const head = await store.headPosition();
        expect(await replay.services.progress.waitFor(head, patience(30_000))).toBe(true);
        for (const w of [ws, r.personalWs]) {
          expect(await getBalance(replay.services.readModels, w)).toEqual(await getBalance(rm, w));
        }
      } finally {
        await replay.close();
      }
    },
  );
});
