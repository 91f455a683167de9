import { startTestServer, TestServer } from '../../support/harness';
import { api, PASSWORD, policyVersionOf, signup, uniqueEmail } from './helpers';

/** The service trusts X-Forwarded-For from loopback, so tests play many client addresses. */
const from = (n: number) => ({ 'X-Forwarded-For': `198.51.100.${n}` });

describe('login throttling', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({
      LOGIN_ATTEMPTS_PER_ADDRESS_PER_MINUTE: '5',
      LOGIN_FAILURES_PER_EMAIL: '3',
      LOGIN_FAILURE_WINDOW_SECONDS: '600',
    });
  });
  afterAll(() => server?.close());

  test('per client address: the attempt over the budget gets 429 with Retry-After; another address is unaffected', async () => {
    const email = uniqueEmail('addr');
    await signup(server, email);
    // Distinct wrong e-mails, so only the address budget is in play.
    for (let i = 0; i < 5; i++) {
      const r = await api(server)
        .post('/v1/login')
        .set(from(1))
        .send({ email: uniqueEmail('nobody'), password: 'wrong password' });
      expect(r.status).toBe(401);
    }
    const refused = await api(server).post('/v1/login').set(from(1)).send({ email, password: PASSWORD });
    expect(refused.status).toBe(429);
    expect(refused.body.detail).toMatch(/Too many login attempts from this address; retry in \d+ s/);
    expect(Number(refused.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(Number(refused.headers['retry-after'])).toBeLessThanOrEqual(60);
    const other = await api(server).post('/v1/login').set(from(2)).send({ email, password: PASSWORD });
    expect(other.status).toBe(200);
  });

  test('per e-mail: failures spread over addresses stop at the budget, even with the right password; a success clears them', async () => {
    const email = uniqueEmail('victim');
    await signup(server, email);
    for (let i = 0; i < 2; i++) {
      expect(
        (
          await api(server)
            .post('/v1/login')
            .set(from(10 + i))
            .send({ email, password: 'wrong password' })
        ).status,
      ).toBe(401);
    }
    // A success clears the two failures…
    expect((await api(server).post('/v1/login').set(from(20)).send({ email, password: PASSWORD })).status).toBe(200);
    // …so three more wrong ones are still answered, and the attempt after them is refused.
    for (let i = 0; i < 2; i++) {
      expect(
        (
          await api(server)
            .post('/v1/login')
            .set(from(30 + i))
            .send({ email, password: 'wrong password' })
        ).status,
      ).toBe(401);
    }
    expect((await api(server).post('/v1/login').set(from(40)).send({ email, password: 'wrong password' })).status).toBe(401);
    const refused = await api(server).post('/v1/login').set(from(41)).send({ email, password: PASSWORD });
    expect(refused.status).toBe(429);
    expect(refused.body.detail).toMatch(/Too many failed logins for this e-mail address/);
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(500);
    // The throttle keys carry no e-mail or address in clear.
    const keys = await server.services.redis.keys(`${server.prefix}throttle:*`);
    expect(keys.length).toBeGreaterThan(0);
    expect(keys.join(' ')).not.toMatch(/@|198\.51/);
  });

  test('signup counts against the address budget too', async () => {
    for (let i = 0; i < 5; i++) {
      expect(
        (
          await api(server)
            .post('/v1/signup')
            .set(from(50))
            .send({ email: uniqueEmail('s'), password: PASSWORD, name: 'S', acceptedPolicyVersion: policyVersionOf(server) })
        ).status,
      ).toBe(201);
    }
    const r = await api(server)
      .post('/v1/signup')
      .set(from(50))
      .send({ email: uniqueEmail('s'), password: PASSWORD, name: 'S', acceptedPolicyVersion: policyVersionOf(server) });
    expect(r.status).toBe(429);
    expect(r.headers['retry-after']).toBeDefined();
  });
});

describe('password hashing cannot be flooded', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ PASSWORD_HASH_CONCURRENCY: '1', PASSWORD_HASH_QUEUE: '2' });
  });
  afterAll(() => server?.close());

  test('beyond the running and queued hashes a login is refused at once (503, Retry-After) and the admitted ones finish', async () => {
    const email = uniqueEmail('genuine');
    await signup(server, email);
    const flood = await Promise.all(
      Array.from({ length: 30 }, (_, i) =>
        api(server)
          .post('/v1/login')
          .set(from(100 + i))
          .send({ email: uniqueEmail('flood'), password: 'wrong password' }),
      ),
    );
    const statuses = flood.map((r) => r.status);
    expect(statuses.filter((s) => s === 401).length).toBeGreaterThanOrEqual(3);
    const busy = flood.filter((r) => r.status === 503);
    expect(busy.length).toBeGreaterThan(0);
    expect(busy.length + statuses.filter((s) => s === 401).length).toBe(30);
    expect(busy[0].headers['retry-after']).toBe('1');
    expect(busy[0].body.detail).toMatch(/Too many logins are being checked/);
    // Once the flood is gone the gate is open again.
    expect((await api(server).post('/v1/login').send({ email, password: PASSWORD })).status).toBe(200);
  });
});
