import { startTestServer, TestServer } from '../../support/harness';
import { api, appendKey, fund, newUser } from './helpers';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server?.close());

const infer = (secret: string) =>
  api(server)
    .post('/external/api/inference')
    .set('Authorization', `Bearer ${secret}`)
    .send({ context: [{ type: 'Human', text: 'hi' }], config: 'service_3_pi', max_tokens: 3 });

describe('key format: purely alphanumeric, recognisable, checksummed; old keys keep working', () => {
  test('a new key is tgk + 49 base62 characters and works; a mistyped one and a foreign one get 401s that say which', async () => {
    const u = await newUser(server, 'keyfmt');
    await fund(server, u.personalWs);
    const created = await api(server).post(`/v1/workspaces/${u.personalWs}/keys`).set(u.auth).send({ name: 'format' });
    expect(created.status).toBe(201);
    const secret: string = created.body.secret;
    expect(secret).toMatch(/^tgk[0-9A-Za-z]{49}$/);
    expect((await infer(secret)).status).toBe(200);

    const typo = secret.slice(0, 10) + (secret[10] === 'x' ? 'y' : 'x') + secret.slice(11);
    const mistyped = await infer(typo);
    expect(mistyped.status).toBe(401);
    expect(mistyped.body.detail).toMatch(/looks like a tollgate key but is mistyped or truncated/);
    expect((await infer(secret.slice(0, -2))).body.detail).toMatch(/mistyped or truncated/);

    const foreign = await infer('sk-proj-0123456789abcdefghij');
    expect(foreign.status).toBe(401);
    expect(foreign.body.detail).toBe('Invalid API key: this is not a tollgate key (tollgate keys start with "tgk")');
  });

  test('a key of the old format (tg_ + 48 base62) still authenticates; once deleted it is a plain "Invalid API key"', async () => {
    const u = await newUser(server, 'legacy');
    await fund(server, u.personalWs);
    const legacy = `tg_${'Ab3'.repeat(16)}`;
    const keyId = await appendKey(server, u.personalWs, u.userId, { secret: legacy });
    expect((await infer(legacy)).status).toBe(200);
    expect((await api(server).delete(`/v1/workspaces/${u.personalWs}/keys/${keyId}`).set(u.auth)).status).toBe(204);
    const gone = await infer(legacy);
    expect(gone.status).toBe(401);
    expect(gone.body.detail).toBe('Invalid API key');
  });
});
