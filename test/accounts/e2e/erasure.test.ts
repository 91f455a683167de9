import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { moneyLines, reconcile, verifyLedger } from '../../../src/cli/ledger';
import { readReceipt } from '../../../src/inference/usecases/receipts';
import { ERASED } from '../../../src/platform/crypto/protected-store';
import { streams } from '../../../src/platform/streams';
import { profilesOf } from '../../../src/accounts';
import { startTestServer, TestServer } from '../../support/harness';
import { attach, deposit } from '../../billing/e2e/helpers';
import { addMember, api, createWorkspace, login, newUser, PASSWORD, policyVersionOf, signup, TestUser } from './helpers';
import { randomUUID } from 'node:crypto';
import { hashPassword } from '../../../src/accounts/sessions/passwords';
import type { ObservedStore } from '../../../src/platform/metrics/observed-store';
import type { ProtectedStore } from '../../../src/platform/crypto/protected-store';

/**
 * Erasure by crypto-shredding, end to end on a real SQLite file: the e-mail, the name and the
 * webhook secrets never reach the file (nor its WAL), erasure makes the person's fields read as
 * erased everywhere, and the money still balances.
 */
const ADMIN_TOKEN = 'operator-token-for-erasure-tests';
let server: TestServer;

beforeAll(async () => {
  server = await startTestServer({ ADMIN_TOKEN, WEBHOOKS_ALLOW_PRIVATE_TARGETS: 'true' });
});
afterAll(() => server?.close());

/** Every byte SQLite holds for the store: the database file and its write-ahead log. */
function rawStore(dir: string): Buffer {
  const file = join(dir, 'events.sqlite');
  return Buffer.concat([file, `${file}-wal`].filter(existsSync).map((f) => readFileSync(f)));
}

const count = (hay: Buffer, needle: string) => {
  let n = 0;
  for (let i = hay.indexOf(needle); i !== -1; i = hay.indexOf(needle, i + 1)) n++;
  return n;
};

const eventCount = async () => (await server.services.store.readAll()).length;

async function world(): Promise<{ alice: TestUser; bob: TestUser; secrets: string[]; team: string; requestId: string }> {
  const alice = await newUser(server, 'zeldaqx');
  const bob = await newUser(server, 'bob');
  const team = await createWorkspace(server, bob, 'Bob team');
  await addMember(server, bob, team, alice); // an invitation to alice's address
  // A card and a deposit through the (sandbox) payment gateway, so reconcile has a charge to match.
  expect((await attach(server, alice, alice.personalWs)).status).toBe(200);
  expect((await deposit(server, alice, alice.personalWs, '100')).status).toBe(201);
  const key = await api(server).post(`/v1/workspaces/${alice.personalWs}/keys`).set(alice.auth).send({ name: 'erasure key' });
  expect(key.status).toBe(201);
  // A paid request: a debit on alice's ledger and a receipt, both to survive her erasure.
  const call = await fetch(`${server.url}/external/api/inference`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key.body.secret}`, 'content-type': 'application/json' },
    body: JSON.stringify({ context: [{ type: 'Human', text: 'Hello' }], config: 'service_3_pi', max_tokens: 4 }),
  });
  expect(call.status).toBe(200);
  await call.text();
  const requestId = call.headers.get('x-request-id')!;
  const reg = await api(server)
    .post(`/v1/workspaces/${alice.personalWs}/webhooks`)
    .set(alice.auth)
    .send({ url: 'http://127.0.0.1:9/hook', eventTypes: ['key.created'] });
  expect(reg.status).toBe(201);
  const rot = await api(server).post(`/v1/workspaces/${alice.personalWs}/webhooks/${reg.body.endpointId}/rotate-secret`).set(alice.auth);
  expect(rot.status).toBe(200);
  return { alice, bob, team, secrets: [reg.body.secret, rot.body.secret], requestId };
}

test('erasing a user: 0 matches of e-mail, name or webhook secret in the SQLite file and WAL, fields read as erased, ledger verify, statements, reconcile and the receipt unchanged to the nano-dollar, the address signs up again', async () => {
  const { alice, secrets, requestId } = await world();
  const s = server.services;
  await s.progress.waitFor(await s.store.headPosition(), 30_000);
  // The money as finance sees it before: statement lines, reconciliation with the gateway, the receipt.
  const money = async () => ({
    statement: (await moneyLines(s.store, { workspaceId: alice.personalWs })).lines,
    totals: (await moneyLines(s.store)).totals.get(alice.personalWs),
    reconcile: await reconcile(s.store, s.gateway),
    receipt: await readReceipt(s, requestId, { workspaceId: alice.personalWs }),
  });
  const moneyBefore = await money();
  expect(moneyBefore.statement.length).toBeGreaterThanOrEqual(2); // the deposit and the request's debit
  expect(moneyBefore.reconcile.differences).toEqual([]);
  expect(moneyBefore.receipt).not.toBeNull();
  const before = await eventCount();

  // A wrong password: 403 and nothing written.
  const wrong = await api(server).delete('/v1/me').set(alice.auth).send({ password: 'not the password' });
  expect(wrong.status).toBe(403);
  expect(await eventCount()).toBe(before);

  const erased = await api(server).delete('/v1/me').set(alice.auth).send({ password: PASSWORD });
  expect(erased.status).toBe(204);
  expect((await api(server).get('/v1/me').set(alice.auth)).status).toBe(401);
  expect((await api(server).post('/v1/login').send({ email: alice.email, password: PASSWORD })).status).toBe(401);

  const raw = rawStore(server.dataDir);
  expect(raw.length).toBeGreaterThan(0);
  expect({ email: count(raw, alice.email), name: count(raw, alice.name), secrets: secrets.map((x) => count(raw, x)) }).toEqual({
    email: 0,
    name: 0,
    secrets: [0, 0],
  });

  // The store, the read models and the audit read the fields as erased.
  const userEvents = await server.services.store.readStream(streams.user(alice.userId));
  expect(userEvents[0].data).toMatchObject({ userId: alice.userId, email: ERASED, name: ERASED, passwordHash: ERASED });
  expect(userEvents.at(-1)?.type).toBe('UserErased');
  expect((await profilesOf(server.services.readModels, [alice.userId])).get(alice.userId)).toMatchObject({ email: ERASED, name: ERASED });
  const all = JSON.stringify((await server.services.store.readAll()).map((e) => e.data));
  expect(all).not.toContain(alice.email);

  const v = await verifyLedger(server.services.store, server.services.redis, server.services.ks);
  expect(v.differences).toEqual([]);
  expect(v.workspaces).toBeGreaterThan(0);
  // Statements, reconciliation and the receipt are the same to the nano-dollar after the erasure.
  expect(await money()).toEqual(moneyBefore);

  // The address is free again, for a new user.
  const again = await signup(server, alice.email, 'Someone Else');
  expect(again.userId).not.toBe(alice.userId);
  await login(server, alice.email);
});

test('the last admin of a workspace with other members is told to hand it over (409 naming it); nothing is written', async () => {
  const carol = await newUser(server, 'carol');
  const dave = await newUser(server, 'dave');
  const ws = await createWorkspace(server, carol, 'Carol and Dave');
  await addMember(server, carol, ws, dave);
  const before = await eventCount();
  const res = await api(server).delete('/v1/me').set(carol.auth).send({ password: PASSWORD });
  expect(res.status).toBe(409);
  expect(res.body.detail).toContain(ws);
  expect(res.body.detail).toContain('Carol and Dave');
  expect(await eventCount()).toBe(before);
});

test('an operator erases a user by id; an unknown id is 404', async () => {
  const op = { Authorization: `Bearer ${ADMIN_TOKEN}` };
  expect((await api(server).post('/admin/users/no-such-user/erase').set(op)).status).toBe(404);
  const erin = await newUser(server, 'erin');
  expect((await api(server).post(`/admin/users/${erin.userId}/erase`).set(op)).status).toBe(204);
  expect((await api(server).post(`/admin/users/${erin.userId}/erase`).set(op)).status).toBe(404);
  const [registered] = await server.services.store.readStream(streams.user(erin.userId));
  expect(registered.data).toMatchObject({ email: ERASED, name: ERASED });
});

test('a store written by the previous release (plain UserRegistered, an email-{sha256} claim): login, no duplicate, erasure hides the old fields, the address signs up again', async () => {
  const raw = ((server.services.store as ObservedStore).inner as ProtectedStore).inner;
  const email = `legacy-${randomUUID()}@example.com`;
  const userId = randomUUID();
  await raw.append(streams.legacyEmail(email), [{ id: randomUUID(), type: 'EmailClaimed', data: { email, userId } }], {
    expectedRevision: 'no_stream',
  });
  const done = await raw.append(
    streams.user(userId),
    [{ id: randomUUID(), type: 'UserRegistered', data: { userId, email, name: 'Old Shape', passwordHash: await hashPassword(PASSWORD) } }],
    { expectedRevision: 'no_stream' },
  );
  await server.services.progress.waitFor(done.position, 5000);
  await login(server, email);
  expect(
    (
      await api(server)
        .post('/v1/signup')
        .send({ email, password: PASSWORD, name: 'Dup', acceptedPolicyVersion: policyVersionOf(server) })
    ).status,
  ).toBe(409);

  expect(
    (
      await api(server)
        .post(`/admin/users/${userId}/erase`)
        .set({ Authorization: `Bearer ${ADMIN_TOKEN}` })
    ).status,
  ).toBe(204);
  const [registered] = await server.services.store.readStream(streams.user(userId));
  expect(registered).toMatchObject({ type: 'UserRegistered', data: { userId, email: ERASED, name: ERASED } });
  const [claim] = await server.services.store.readStream(streams.legacyEmail(email));
  expect(claim.data).toEqual({ email: ERASED, userId });
  const again = await signup(server, email, 'New Person');
  expect(again.userId).not.toBe(userId);
});

test('GET /v1/me/export gives the user their profile, workspaces and the events that name them', async () => {
  const frank = await newUser(server, 'frank');
  const res = await api(server).get('/v1/me/export').set(frank.auth);
  expect(res.status).toBe(200);
  expect(res.body.user).toMatchObject({ userId: frank.userId, email: frank.email, name: frank.name });
  expect(res.body.workspaces.map((w: { workspaceId: string }) => w.workspaceId)).toContain(frank.personalWs);
  const types = res.body.events.map((e: { type: string }) => e.type);
  expect(types).toEqual(expect.arrayContaining(['UserRegistered', 'UserLoggedIn', 'WorkspaceCreated', 'MemberJoined']));
  expect(JSON.stringify(res.body)).not.toContain('scrypt$');
});
