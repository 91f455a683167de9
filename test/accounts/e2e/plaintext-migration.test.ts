import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { accountsProtectedEvents } from '../../../src/accounts/protected-events';
import { webhooksProtectedEvents } from '../../../src/webhooks/protected-events';
import { verifyLedger } from '../../../src/cli/ledger';
import { projectionsOf } from '../../../src/main';
import type { ProtectedEventType } from '../../../src/platform/crypto/protected-store';
import { bundleChild } from '../../support/child-process';
import { startTestServer, TestServer } from '../../support/harness';
import { createTestDatabase, TEST_DATABASE_URL, type TestDatabase } from '../../support/postgres';
import { dumpReadModels } from '../../support/read-model-dump';
import { countInPostgres } from '../../support/raw-store';
import { TEST_REDIS_URL } from '../../support/redis';
import { addMember, api, createWorkspace, fund, login, newUser, PASSWORD, policyVersionOf, signup, TestUser } from './helpers';

/**
 * The documented migration of a store written before encryption (docs/SECURITY.md, "Migration of
 * plain-text events"): the fixture is written by the real service through the real adapters in the
 * previous release's form (no event sealed, claim streams named email-{sha256}); the new release
 * runs on it (logins, an erasure), then `tollgate events seal-plaintext` runs as a process, twice.
 * Afterwards the raw SQLite file and WAL (or every PostgreSQL table) hold none of the e-mails, names,
 * invitation addresses, webhook secrets or sha256 stream names; a from-scratch replay of the
 * projections dumps equal to one taken before; the ledger verifies; logins and sign-ups behave.
 */
jest.setTimeout(300_000);

const ROOT = resolve(__dirname, '../../..');
const CLI = bundleChild(resolve(__dirname, '../../support/fixtures/shipped-cli.ts'));
afterAll(() => CLI.dispose());

const ADMIN_TOKEN = 'operator-token-for-migration-tests';
const protectedLists = [accountsProtectedEvents, webhooksProtectedEvents] as ProtectedEventType[][];

/** The service as the release before encryption wrote: nothing sealed, claims on email-{sha256}. */
async function previousRelease(env: Record<string, string>): Promise<TestServer> {
  const saved = protectedLists.map((l) => l.splice(0));
  let server: TestServer;
  try {
    server = await startTestServer(env);
  } finally {
    protectedLists.forEach((l, i) => l.push(...saved[i]));
  }
  server.services.lookupHash = (value) =>
    createHash('sha256')
      .update(value.replace(/^email:/, ''))
      .digest('hex');
  return server;
}

function runCli(args: string[], env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((done, fail) => {
    const clean: Record<string, string> = {};
    for (const [k, v] of Object.entries(process.env))
      if (v !== undefined && !/^(EVENT_STORE|DATABASE_URL|DATA_DIR|MASTER_KEY|REDIS_)/.test(k)) clean[k] = v;
    const child = spawn(process.execPath, [...CLI.args, ...args], {
      env: { ...clean, NODE_PATH: join(ROOT, 'node_modules'), LOG_LEVEL: 'silent', REDIS_URL: TEST_REDIS_URL, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      fail(new Error(`tollgate ${args.join(' ')} did not finish: ${stderr}`));
    }, 200_000);
    child.once('exit', (code) => {
      clearTimeout(timer);
      done({ code, stdout, stderr });
    });
  });
}

const count = (hay: Buffer, needle: string) => {
  let n = 0;
  for (let i = hay.indexOf(needle); i !== -1; i = hay.indexOf(needle, i + 1)) n++;
  return n;
};

/** How often each needle occurs in the store's raw bytes: the SQLite file and WAL, or every row of every PostgreSQL table. */
type Grep = (needles: string[]) => Promise<number[]>;

const sqliteGrep =
  (dir: string): Grep =>
  async (needles) => {
    const file = join(dir, 'events.sqlite');
    const raw = Buffer.concat([file, `${file}-wal`].filter(existsSync).map((f) => readFileSync(f)));
    expect(raw.length).toBeGreaterThan(0);
    return needles.map((n) => count(raw, n));
  };

/** A projector of its own, in a fresh Redis prefix, replays the whole log; its read models, dumped. */
async function replayDump(env: Record<string, string>): Promise<Record<string, Record<string, unknown>>> {
  const replay = await startTestServer({ ...env, ROLE: 'projector' });
  try {
    const names = projectionsOf(replay.services).map((p) => p.name);
    expect(await replay.services.progress.waitFor(await replay.services.store.headPosition(), 120_000)).toBe(true);
    return await dumpReadModels(replay.services.redis, replay.prefix, names);
  } finally {
    await replay.close();
  }
}

const sha256 = (email: string) => createHash('sha256').update(email).digest('hex');

async function scenario(env: Record<string, string>, grep: Grep): Promise<void> {
  // 1. The previous release writes users, a team, invitations (one accepted, one revoked), a key, a deposit, webhooks.
  const old = await previousRelease(env);
  let alice: TestUser, dave: TestUser, carol: TestUser;
  const secrets: string[] = [];
  try {
    alice = await newUser(old, 'zeldamig');
    const bob = await newUser(old, 'bob');
    carol = await newUser(old, 'carolmig');
    dave = await newUser(old, 'davemig');
    const team = await createWorkspace(old, bob, 'Bob team');
    await addMember(old, bob, team, alice);
    const inv = await api(old).post(`/v1/workspaces/${team}/invitations`).set(bob.auth).send({ email: carol.email });
    expect(inv.status).toBe(201);
    expect((await api(old).delete(`/v1/workspaces/${team}/invitations/${inv.body.invitationId}`).set(bob.auth)).status).toBe(204);
    await fund(old, alice.personalWs);
    expect((await api(old).post(`/v1/workspaces/${alice.personalWs}/keys`).set(alice.auth).send({ name: 'old key' })).status).toBe(201);
    const reg = await api(old)
      .post(`/v1/workspaces/${alice.personalWs}/webhooks`)
      .set(alice.auth)
      .send({ url: 'http://127.0.0.1:9/hook', eventTypes: ['key.created'] });
    expect(reg.status).toBe(201);
    const rot = await api(old).post(`/v1/workspaces/${alice.personalWs}/webhooks/${reg.body.endpointId}/rotate-secret`).set(alice.auth);
    expect(rot.status).toBe(200);
    secrets.push(reg.body.secret, rot.body.secret);
  } finally {
    await old.close();
  }
  const personal = [alice.email, alice.name, carol.email, dave.email, dave.name, ...secrets];
  const streamNames = [alice, carol, dave].map((u) => sha256(u.email));
  // The fixture really is the old form: every value and claim stream name is in the store's bytes.
  for (const n of await grep([...personal, ...streamNames])) expect(n).toBeGreaterThan(0);

  // 2. The new release on the old store: the old claims log in; dave is erased before the migration,
  //    and his address signs up again (a keyed claim stream now exists beside his old one).
  const s1 = await startTestServer({ ...env, ADMIN_TOKEN });
  let daveAgain: string;
  try {
    await login(s1, alice.email);
    expect(
      (
        await api(s1)
          .post(`/admin/users/${dave.userId}/erase`)
          .set({ Authorization: `Bearer ${ADMIN_TOKEN}` })
      ).status,
    ).toBe(204);
    daveAgain = (await signup(s1, dave.email, 'Dave Again')).userId;
  } finally {
    await s1.close();
  }
  const before = await replayDump(env);

  // 3. The migration, as an operator runs it; a second run finds nothing left to do.
  const first = await runCli(['events', 'seal-plaintext', '--batch', '7'], env);
  expect(first).toMatchObject({ code: 0 });
  expect(first.stderr).toMatch(/sealed \d+ of \d+ plain-text events/);
  const sealed = /^sealed (\d+) plain-text events, renamed 4 claim streams; \S+ compacted\n$/.exec(first.stdout);
  expect(sealed).not.toBeNull();
  // 4 UserRegistered + 4 EmailClaimed + 2 InvitationSent + 1 InvitationRevoked + 2 webhook events
  expect(Number(sealed![1])).toBe(13);
  const again = await runCli(['events', 'seal-plaintext'], env);
  expect(again).toMatchObject({ code: 0, stdout: expect.stringMatching(/^sealed 0 plain-text events, renamed 0 claim streams;/) });

  // 4. Nothing personal and no secret is left in the raw store; no sha256 claim stream name either.
  expect(await grep([...personal, ...streamNames])).toEqual([...personal, ...streamNames].map(() => 0));

  // 5. A replay from scratch builds the same read models as before the migration.
  expect(await replayDump(env)).toEqual(before);

  // 6. The service on the migrated store: the same logins, no duplicate address, the erased address free, the ledger whole.
  const s2 = await startTestServer({ ...env, ADMIN_TOKEN });
  try {
    await login(s2, alice.email);
    const dup = await api(s2)
      .post('/v1/signup')
      .send({ email: alice.email, password: PASSWORD, name: 'Dup', acceptedPolicyVersion: policyVersionOf(s2) });
    expect(dup.status).toBe(409);
    // dave's address belongs to the user who signed up with it after his erasure (his old claim moved aside).
    const taken = await api(s2)
      .post('/v1/signup')
      .send({ email: dave.email, password: PASSWORD, name: 'Third', acceptedPolicyVersion: policyVersionOf(s2) });
    expect(taken.status).toBe(409);
    const daveMe = await api(s2)
      .get('/v1/me')
      .set({ Authorization: `Bearer ${await login(s2, dave.email)}` });
    expect(daveMe.body.user).toMatchObject({ userId: daveAgain, name: 'Dave Again' });
    const me = await api(s2)
      .get('/v1/me')
      .set({ Authorization: `Bearer ${await login(s2, alice.email)}` });
    expect(me.body.user).toMatchObject({ email: alice.email, name: alice.name });
    const v = await verifyLedger(s2.services.store, s2.services.redis, s2.services.ks);
    expect(v.differences).toEqual([]);
    expect(v.workspaces).toBeGreaterThan(0);
  } finally {
    await s2.close();
  }
}

test('SQLite: a store written before encryption is sealed in place; 0 matches in the file and WAL; replay equal; ledger verifies', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-migrate-'));
  try {
    await scenario(
      { DATA_DIR: dir, MASTER_KEY: randomBytes(32).toString('base64'), WEBHOOKS_ALLOW_PRIVATE_TARGETS: 'true' },
      sqliteGrep(dir),
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

const maybe = TEST_DATABASE_URL ? test : test.skip;
let db: TestDatabase | undefined;
afterAll(() => db?.drop());

maybe('PostgreSQL: the same migration; 0 matches in any table', async () => {
  db = await createTestDatabase('migrate');
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-migrate-pg-'));
  try {
    await scenario(
      {
        EVENT_STORE: 'postgres',
        DATABASE_URL: db.url,
        DATA_DIR: dir,
        MASTER_KEY: randomBytes(32).toString('base64'),
        WEBHOOKS_ALLOW_PRIVATE_TARGETS: 'true',
      },
      (needles) => countInPostgres(db!.url, needles),
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
