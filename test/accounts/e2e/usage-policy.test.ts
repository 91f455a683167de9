import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { streams } from '../../../src/platform/streams';
import { hashPassword } from '../../../src/accounts/sessions/passwords';
import { startTestServer, TestServer } from '../../support/harness';
import { POLICY_VERSION } from '../../support/policy';
import { api, createWorkspace, fund, login, newUser, PASSWORD, uniqueEmail } from './helpers';
import { expectMatchesContract } from '../../support/contract';
import { acceptPolicy, usagePolicy } from '../../../src/accounts/policy/routes/policy-schemas';
import { createKey, me } from '../../../src/accounts/routes/schemas';

const DOC = readFileSync(resolve(__dirname, '../../../docs/USAGE-POLICY.md'), 'utf8');

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server?.close());

const head = () => server.services.store.headPosition();

/** An account as created before acceptance was recorded: registered, no UsagePolicyAccepted. */
async function legacyUser(s: TestServer, acceptedVersion?: string) {
  const email = uniqueEmail('legacy');
  const userId = randomUUID();
  const passwordHash = await hashPassword(PASSWORD);
  await s.services.store.append(streams.legacyEmail(email), [{ id: randomUUID(), type: 'EmailClaimed', data: { email, userId } }], {
    expectedRevision: 'no_stream',
  });
  const events = [{ id: randomUUID(), type: 'UserRegistered', data: { userId, email, name: 'Legacy', passwordHash } }];
  if (acceptedVersion) events.push({ id: randomUUID(), type: 'UsagePolicyAccepted', data: { userId, version: acceptedVersion } as never });
  const done = await s.services.store.append(streams.user(userId), events, { expectedRevision: 'no_stream' });
  await s.services.progress.waitFor(done.position, 5000);
  const token = await login(s, email);
  const me = await api(s).get('/v1/me').set('Authorization', `Bearer ${token}`);
  const ws = (me.body.workspaces as { workspaceId: string }[])[0].workspaceId;
  return { userId, email, auth: { Authorization: `Bearer ${token}` }, ws };
}

describe('GET /v1/policies/usage', () => {
  test('anyone gets the version, effective date and the rules of docs/USAGE-POLICY.md', async () => {
    const res = await api(server).get('/v1/policies/usage');
    expect(res.status).toBe(200);
    expect(res.body.version).toBe(/^Version: (\S+)$/m.exec(DOC)![1]);
    expect(res.body.effectiveDate).toBe(/^Effective: (\S+)$/m.exec(DOC)![1]);
    expect(res.body.page).toBe('/usage-policy');
    await expectMatchesContract(res, usagePolicy);
    expect(res.body.rules.map((r: { number: number }) => r.number)).toEqual([1, 2, 3, 4, 5, 6]);
    const text = JSON.stringify(res.body.rules).toLowerCase();
    // The specification's six rules.
    for (const words of ['infringe', 'reverse engineer', 'compete', 'written by a', 'buy, sell or transfer', 'personal'])
      expect(text).toContain(words);
  });
});

describe('signup accepts the usage policy', () => {
  test('UsagePolicyAccepted is appended with the user, in the same write', async () => {
    const u = await newUser(server, 'new');
    const events = await server.services.store.readStream(streams.user(u.userId));
    expect(events.slice(0, 2).map((e) => [e.type, e.data])).toEqual([
      ['UserRegistered', expect.objectContaining({ userId: u.userId })],
      ['UsagePolicyAccepted', { userId: u.userId, version: POLICY_VERSION }],
    ]);
    const me = await api(server).get('/v1/me').set(u.auth);
    expect(me.body.usagePolicy).toMatchObject({
      currentVersion: POLICY_VERSION,
      acceptedVersion: POLICY_VERSION,
      accepted: true,
      detail: null,
    });
  });

  test.each([
    ['missing', undefined],
    ['an older version', '0.9'],
    ['a number', 1],
    ['empty', ''],
  ])('acceptedPolicyVersion %s → 422 naming the field and the current version; nothing appended', async (_what, version) => {
    const before = await head();
    const email = uniqueEmail('refused');
    const res = await api(server).post('/v1/signup').send({ email, password: PASSWORD, name: 'No', acceptedPolicyVersion: version });
    expect(res.status).toBe(422);
    expect(res.body.detail).toEqual([
      {
        loc: ['body', 'acceptedPolicyVersion'],
        msg: `must be the current usage policy version, "${POLICY_VERSION}" (see GET /v1/policies/usage)`,
        type: 'custom',
      },
    ]);
    expect(await head()).toBe(before);
    expect((await api(server).post('/v1/login').send({ email, password: PASSWORD })).status).toBe(401);
  });
});

describe('accounts created before acceptance was recorded', () => {
  test('count as not accepted: /v1/me says so, key creation is 403 pointing at the rules, accepting once unblocks it', async () => {
    const u = await legacyUser(server);
    await fund(server, u.ws);
    const me_ = await api(server).get('/v1/me').set(u.auth);
    expect(me_.body.usagePolicy).toEqual({
      currentVersion: POLICY_VERSION,
      effectiveDate: expect.any(String),
      acceptedVersion: null,
      acceptedAt: null,
      accepted: false,
      detail: expect.stringContaining('You have not accepted the usage policy'),
    });
    await expectMatchesContract(me_, me);

    let before = await head();
    const refused = await api(server).post(`/v1/workspaces/${u.ws}/keys`).set(u.auth).send({ name: 'blocked' });
    expect(refused.status).toBe(403);
    expect(refused.body.detail).toContain('GET /v1/policies/usage');
    await expectMatchesContract(refused, createKey);
    expect(refused.body.detail).toContain(`POST /v1/policies/usage/accept {"version": "${POLICY_VERSION}"}`);
    expect(await head()).toBe(before);

    for (const body of [{}, { version: '0.1' }, { version: null }]) {
      const bad = await api(server).post('/v1/policies/usage/accept').set(u.auth).send(body);
      expect(bad.status).toBe(422);
      expect(bad.body.detail).toEqual([
        expect.objectContaining({ loc: ['body', 'version'], msg: expect.stringContaining(`"${POLICY_VERSION}"`) }),
      ]);
      await expectMatchesContract(bad, acceptPolicy);
    }
    expect(await head()).toBe(before);

    const ok = await api(server).post('/v1/policies/usage/accept').set(u.auth).send({ version: POLICY_VERSION });
    expect(ok.status).toBe(200);
    expect(ok.body).toMatchObject({ accepted: true, acceptedVersion: POLICY_VERSION, detail: null });
    await expectMatchesContract(ok, acceptPolicy);
    const stream = await server.services.store.readStream(streams.user(u.userId));
    expect(stream.filter((e) => e.type === 'UsagePolicyAccepted').map((e) => [e.data, e.metadata.actor])).toEqual([
      [{ userId: u.userId, version: POLICY_VERSION }, u.userId],
    ]);

    // Accepting again is harmless and writes nothing.
    before = await head();
    expect((await api(server).post('/v1/policies/usage/accept').set(u.auth).send({ version: POLICY_VERSION })).status).toBe(200);
    expect(await head()).toBe(before);

    const created = await api(server).post(`/v1/workspaces/${u.ws}/keys`).set(u.auth).send({ name: 'allowed' });
    expect(created.status).toBe(201);
  });

  test('accepting needs a session', async () => {
    const res = await api(server).post('/v1/policies/usage/accept').send({ version: POLICY_VERSION });
    expect(res.status).toBe(401);
  });

  test('a member who has not accepted is blocked in a team workspace too; rolling a key stays possible', async () => {
    const owner = await newUser(server, 'owner');
    const team = await createWorkspace(server, owner, 'Team');
    await fund(server, team);
    const key = (await api(server).post(`/v1/workspaces/${team}/keys`).set(owner.auth).send({ name: 'shared' })).body;
    const legacy = await legacyUser(server);
    const inv = await api(server).post(`/v1/workspaces/${team}/invitations`).set(owner.auth).send({ email: legacy.email });
    await api(server).post(`/v1/invitations/${inv.body.invitationId}/accept`).set(legacy.auth).expect(200);
    expect((await api(server).post(`/v1/workspaces/${team}/keys`).set(legacy.auth).send({ name: 'mine' })).status).toBe(403);
    // A leaked key can always be rolled (by its creator or an admin: make the member one).
    await api(server).put(`/v1/workspaces/${team}/members/${legacy.userId}`).set(owner.auth).send({ role: 'admin' }).expect(200);
    expect((await api(server).post(`/v1/workspaces/${team}/keys/${key.keyId}/roll`).set(legacy.auth).send({})).status).toBe(200);
  });
});

describe('a new version of the policy', () => {
  let dir: string;
  let v2: TestServer;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tollgate-policy-'));
    const file = join(dir, 'policy.md');
    writeFileSync(file, DOC.replace(/^Version: .*$/m, 'Version: 2.0').replace(/^Effective: .*$/m, 'Effective: 2030-01-01'));
    v2 = await startTestServer({ USAGE_POLICY_FILE: file });
  });
  afterAll(async () => {
    await v2?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test('users who accepted the old one are asked again: /v1/me says it changed, keys are 403 until they accept it', async () => {
    expect((await api(v2).get('/v1/policies/usage')).body).toMatchObject({ version: '2.0', effectiveDate: '2030-01-01' });
    const u = await legacyUser(v2, POLICY_VERSION);
    await fund(v2, u.ws);
    const me = await api(v2).get('/v1/me').set(u.auth);
    expect(me.body.usagePolicy).toMatchObject({ currentVersion: '2.0', acceptedVersion: POLICY_VERSION, accepted: false });
    expect(me.body.usagePolicy.detail).toContain(
      `The usage policy changed (version 2.0, effective 2030-01-01; you accepted version ${POLICY_VERSION})`,
    );
    const refused = await api(v2).post(`/v1/workspaces/${u.ws}/keys`).set(u.auth).send({ name: 'blocked' });
    expect(refused.status).toBe(403);
    expect(refused.body.detail).toContain('The usage policy changed');
    expect((await api(v2).post('/v1/policies/usage/accept').set(u.auth).send({ version: POLICY_VERSION })).status).toBe(422);
    expect((await api(v2).post('/v1/policies/usage/accept').set(u.auth).send({ version: '2.0' })).status).toBe(200);
    expect((await api(v2).post(`/v1/workspaces/${u.ws}/keys`).set(u.auth).send({ name: 'allowed' })).status).toBe(201);
  });

  test('a signup must name the new version', async () => {
    const email = uniqueEmail('v2');
    const old = await api(v2).post('/v1/signup').send({ email, password: PASSWORD, name: 'V', acceptedPolicyVersion: POLICY_VERSION });
    expect(old.status).toBe(422);
    expect(old.body.detail[0].msg).toContain('"2.0"');
    expect((await api(v2).post('/v1/signup').send({ email, password: PASSWORD, name: 'V', acceptedPolicyVersion: '2.0' })).status).toBe(
      201,
    );
  });
});

describe('a policy file that cannot be used', () => {
  test.each([
    ['missing', null, /no such file/],
    ['without a version', '# Policy\n\n## Rules\n\n1. **A.** b\n', /Version/],
    ['without rules', 'Version: 3\nEffective: 2030-01-01\n\n## Rules\n\nnothing\n', /no numbered rules/],
  ])('%s stops the start with one line naming USAGE_POLICY_FILE', async (_what, content, why) => {
    const dir = mkdtempSync(join(tmpdir(), 'tollgate-policy-'));
    const file = join(dir, 'policy.md');
    if (content !== null) writeFileSync(file, content);
    try {
      const err = await startTestServer({ USAGE_POLICY_FILE: file }).then(
        (s) => s.close().then(() => null),
        (e: Error) => e,
      );
      expect(err).not.toBeNull();
      expect(err!.name).toBe('ConfigError');
      expect(err!.message.split('\n')).toHaveLength(1);
      expect(err!.message).toMatch(/^invalid setting USAGE_POLICY_FILE: /);
      expect(err!.message).toMatch(why);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
