import { sessionHash } from '../../../src/accounts/sessions/sessions';
import { personalWorkspaceId } from '../../../src/accounts/user';
import { claimStreamOf } from '../../../src/accounts/usecases/user-by-email';
import { streams } from '../../../src/platform/streams';
import { startTestServer, TestServer } from '../../support/harness';
import { api, login, newUser, PASSWORD, signup, uniqueEmail } from './helpers';
import { POLICY_VERSION } from '../../support/policy';
import { expectMatchesContract } from '../../support/contract';
import { login as loginRoute, me as meRoute, signup as signupRoute } from '../../../src/accounts/routes/schemas';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server?.close());

const cookieOf = (res: { headers: Record<string, unknown> }) => {
  const set = res.headers['set-cookie'] as string[] | undefined;
  return set?.find((c) => c.startsWith('tg_session='));
};

describe('POST /v1/signup', () => {
  test('201 with the user; the password is stored only as a scrypt hash', async () => {
    const email = uniqueEmail('signup');
    const res = await api(server)
      .post('/v1/signup')
      .send({ email: email.toUpperCase(), password: PASSWORD, name: 'Sig Nup', acceptedPolicyVersion: POLICY_VERSION });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({ userId: expect.any(String), email, name: 'Sig Nup' });
    await expectMatchesContract(res, signupRoute);
    const events = await server.services.store.readStream(streams.user(res.body.userId));
    expect(events.map((e) => [e.type, e.revision])).toEqual([
      ['UserRegistered', 0n],
      ['UsagePolicyAccepted', 1n],
    ]);
    expect(events[1].data).toEqual({ userId: res.body.userId, version: POLICY_VERSION });
    const everything = await server.services.store.readAll();
    expect(JSON.stringify(everything.map((e) => [e.data, e.metadata]))).not.toContain(PASSWORD);
    expect((events[0].data as { passwordHash: string }).passwordHash).toMatch(/^scrypt\$16384\$8\$1\$[^$]+\$[^$]+$/);
    const claim = await server.services.store.readStream(claimStreamOf(server.services, email));
    expect(claim.map((e) => [e.type, e.data])).toEqual([['EmailClaimed', { email, userId: res.body.userId }]]);
  });

  test('the same e-mail again (any case) → 409 and nothing appended', async () => {
    const email = uniqueEmail('dup');
    await signup(server, email);
    const head = await server.services.store.headPosition();
    const res = await api(server)
      .post('/v1/signup')
      .send({ email: ` ${email.toUpperCase()} `, password: 'another password', name: 'Other', acceptedPolicyVersion: POLICY_VERSION });
    expect(res.status).toBe(409);
    expect(res.body).toEqual({ detail: 'An account with this e-mail already exists' });
    expect(await server.services.store.headPosition()).toBe(head);
  });

  test('a password shorter than 8 characters → 422 in FastAPI format', async () => {
    const res = await api(server)
      .post('/v1/signup')
      .send({ email: uniqueEmail(), password: 'short7c', name: 'X', acceptedPolicyVersion: POLICY_VERSION });
    expect(res.status).toBe(422);
    expect(res.body.detail).toEqual([
      { loc: ['body', 'password'], msg: 'A password must be at least 8 characters long', type: 'too_small' },
    ]);
  });

  test('a bad e-mail, a missing name or no body → 422 naming each field', async () => {
    const bad = await api(server).post('/v1/signup').send({ email: 'not-an-email', password: PASSWORD });
    expect(bad.status).toBe(422);
    expect(bad.body.detail.map((d: { loc: string[] }) => d.loc)).toEqual([
      ['body', 'email'],
      ['body', 'name'],
      ['body', 'acceptedPolicyVersion'],
    ]);
    const none = await api(server).post('/v1/signup');
    expect(none.status).toBe(422);
    expect(none.body.detail.map((d: { loc: string[] }) => d.loc.join('.'))).toEqual([
      'body.email',
      'body.password',
      'body.name',
      'body.acceptedPolicyVersion',
    ]);
  });
});

describe('POST /v1/login', () => {
  test('200 with sessionToken in the body and an HttpOnly SameSite cookie; the first login creates the personal workspace', async () => {
    const email = uniqueEmail('first');
    const { userId } = await signup(server, email, 'First');
    const res = await api(server).post('/v1/login').send({ email, password: PASSWORD });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      sessionToken: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/),
      expiresIn: server.services.config.SESSION_TTL_SECONDS,
      user: { userId, email, name: 'First' },
      firstLogin: true,
    });
    await expectMatchesContract(res, loginRoute);
    const cookie = cookieOf(res)!;
    expect(cookie).toContain(`tg_session=${res.body.sessionToken}`);
    expect(cookie).toMatch(/HttpOnly/i);
    expect(cookie).toMatch(/SameSite=Lax/i);
    expect(cookie).toMatch(/Path=\//);

    const ws = personalWorkspaceId(userId);
    const wsEvents = await server.services.store.readStream(streams.workspace(ws));
    expect(wsEvents.map((e) => e.type)).toEqual(['WorkspaceCreated', 'MemberJoined']);
    expect(wsEvents[0].data).toMatchObject({ personal: true, createdBy: userId });

    // The next request already sees it.
    const me = await api(server).get('/v1/me').set('Authorization', `Bearer ${res.body.sessionToken}`);
    expect(me.body.workspaces).toEqual([{ workspaceId: ws, name: 'Personal', role: 'admin', personal: true }]);
  });

  test('the cookie is Secure behind an HTTPS proxy on loopback, and not over plain HTTP', async () => {
    const email = uniqueEmail('secure');
    await signup(server, email);
    const plain = await api(server).post('/v1/login').send({ email, password: PASSWORD });
    expect(cookieOf(plain)).not.toMatch(/;\s*Secure/i);
    const https = await api(server).post('/v1/login').set('X-Forwarded-Proto', 'https').send({ email, password: PASSWORD });
    expect(https.status).toBe(200);
    expect(cookieOf(https)).toMatch(/;\s*Secure/i);
  });

  test('later logins create no second personal workspace', async () => {
    const email = uniqueEmail('again');
    const { userId } = await signup(server, email);
    await login(server, email);
    const res = await api(server).post('/v1/login').send({ email, password: PASSWORD });
    expect(res.body.firstLogin).toBe(false);
    const me = await api(server).get('/v1/me').set('Authorization', `Bearer ${res.body.sessionToken}`);
    expect(me.body.workspaces.filter((w: { personal: boolean }) => w.personal)).toHaveLength(1);
    expect((await server.services.store.readStream(streams.user(userId))).map((e) => e.type)).toEqual([
      'UserRegistered',
      'UsagePolicyAccepted',
      'UserLoggedIn',
      'UserLoggedIn',
    ]);
  });

  test('a wrong password and an unknown e-mail get the same 401, and no cookie', async () => {
    const email = uniqueEmail('wrong');
    await signup(server, email);
    const wrong = await api(server).post('/v1/login').send({ email, password: 'not the password' });
    const unknown = await api(server)
      .post('/v1/login')
      .send({ email: uniqueEmail('nobody'), password: PASSWORD });
    for (const res of [wrong, unknown]) {
      expect(res.status).toBe(401);
      expect(res.body).toEqual({ detail: 'Invalid e-mail or password' });
      expect(cookieOf(res)).toBeUndefined();
    }
  });

  test('the e-mail is matched case-insensitively', async () => {
    const email = uniqueEmail('case');
    await signup(server, email);
    const res = await api(server).post('/v1/login').send({ email: email.toUpperCase(), password: PASSWORD });
    expect(res.status).toBe(200);
  });

  test('the session is stored under its SHA-256 with the configured TTL, never in clear', async () => {
    const email = uniqueEmail('sess');
    await signup(server, email);
    const token = await login(server, email);
    const { redis, ks, config } = server.services;
    expect(await redis.exists(ks.shared('session', token))).toBe(0);
    const key = ks.shared('session', sessionHash(token));
    const ttl = await redis.ttl(key);
    expect(ttl).toBeGreaterThan(config.SESSION_TTL_SECONDS - 10);
    expect(ttl).toBeLessThanOrEqual(config.SESSION_TTL_SECONDS);
    expect(await redis.get(key)).not.toContain(token);
  });
});

describe('sessions: bearer, cookie, logout, expiry', () => {
  test('GET /v1/me without a session → 401; with a bad token → 401; with a malformed header → 401', async () => {
    const none = await api(server).get('/v1/me');
    expect(none.status).toBe(401);
    expect(none.body.detail).toMatch(/Not authenticated/);
    const bad = await api(server).get('/v1/me').set('Authorization', 'Bearer nope');
    expect(bad.status).toBe(401);
    expect(bad.body.detail).toMatch(/Invalid or expired session/);
    const basic = await api(server).get('/v1/me').set('Authorization', 'Basic abc');
    expect(basic.status).toBe(401);
    expect(basic.body.detail).toBe('Malformed Authorization header: expected "Bearer <sessionToken>"');
    // The token alone, without "Bearer ": named as a malformed header, not as an expired session.
    const u = await newUser(server, 'nobearer');
    const bare = await api(server).get('/v1/me').set('Authorization', u.token);
    expect(bare.status).toBe(401);
    expect(bare.body.detail).toBe('Malformed Authorization header: expected "Bearer <sessionToken>"');
  });

  test('the cookie authenticates reads', async () => {
    const u = await newUser(server, 'cookie');
    const res = await api(server).get('/v1/me').set('Cookie', `tg_session=${u.token}`);
    expect(res.status).toBe(200);
    expect(res.body.user.userId).toBe(u.userId);
  });

  test('a cookie-authenticated write needs X-Requested-With (or a same-origin Origin); a bearer write does not', async () => {
    const u = await newUser(server, 'csrf');
    const head = await server.services.store.headPosition();
    const forged = await api(server).post('/v1/workspaces').set('Cookie', `tg_session=${u.token}`).send({ name: 'Forged' });
    expect(forged.status).toBe(403);
    expect(forged.body.detail).toMatch(/X-Requested-With/);
    const crossSite = await api(server)
      .post('/v1/workspaces')
      .set('Cookie', `tg_session=${u.token}`)
      .set('Origin', 'https://evil.example')
      .send({ name: 'Forged' });
    expect(crossSite.status).toBe(403);
    expect(await server.services.store.headPosition()).toBe(head);

    const xhr = await api(server)
      .post('/v1/workspaces')
      .set('Cookie', `tg_session=${u.token}`)
      .set('X-Requested-With', 'fetch')
      .send({ name: 'Ok 1' });
    expect(xhr.status).toBe(201);
    const sameOrigin = await api(server)
      .post('/v1/workspaces')
      .set('Cookie', `tg_session=${u.token}`)
      .set('Origin', server.url)
      .send({ name: 'Ok 2' });
    expect(sameOrigin.status).toBe(201);
    const bearer = await api(server).post('/v1/workspaces').set(u.auth).send({ name: 'Ok 3' });
    expect(bearer.status).toBe(201);
  });

  test('POST /v1/logout → 204 and clears the cookie; the token then gets 401 everywhere', async () => {
    const u = await newUser(server, 'logout');
    const res = await api(server).post('/v1/logout').set(u.auth);
    expect(res.status).toBe(204);
    expect(cookieOf(res)).toMatch(/tg_session=;.*Expires=Thu, 01 Jan 1970/);
    for (const req of [
      api(server).get('/v1/me'),
      api(server).get(`/v1/workspaces/${u.personalWs}/keys`),
      api(server).post('/v1/workspaces').send({ name: 'x' }),
    ]) {
      const after = await req.set(u.auth);
      expect(after.status).toBe(401);
    }
    expect((await api(server).post('/v1/logout').set(u.auth)).status).toBe(401);
  });

  test('logging out one session leaves the others valid', async () => {
    const u = await newUser(server, 'two');
    const second = await login(server, u.email);
    await api(server).post('/v1/logout').set(u.auth).expect(204);
    expect((await api(server).get('/v1/me').set('Authorization', `Bearer ${second}`)).status).toBe(200);
  });

  test('an expired session (gone from Redis) → 401', async () => {
    const u = await newUser(server, 'expired');
    await server.services.redis.del(server.services.ks.shared('session', sessionHash(u.token)));
    expect((await api(server).get('/v1/me').set(u.auth)).status).toBe(401);
  });
});

describe('GET /v1/me', () => {
  test('the user, workspaces with role and personal flag, pending invitations and notices', async () => {
    const u = await newUser(server, 'me');
    const res = await api(server).get('/v1/me').set(u.auth);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      user: { userId: u.userId, email: u.email, name: u.name },
      workspaces: [{ workspaceId: u.personalWs, name: 'Personal', role: 'admin', personal: true }],
      invitations: [],
      notices: [],
      usagePolicy: {
        currentVersion: POLICY_VERSION,
        effectiveDate: expect.stringMatching(/^\d{4}-\d{2}-\d{2}$/),
        acceptedVersion: POLICY_VERSION,
        acceptedAt: expect.any(String),
        accepted: true,
        detail: null,
      },
    });
    await expectMatchesContract(res, meRoute);
  });
});
