import { gzipSync } from 'node:zlib';
import http from 'node:http';
import net from 'node:net';
import { startTestServer, TestServer } from '../../support/harness';
import { api, fund, login, newUser, PASSWORD, policyVersionOf, signup, uniqueEmail } from '../../accounts/e2e/helpers';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server?.close());

/** POSTs exact bytes (supertest re-types Buffers) and returns status and JSON body. */
function postBytes(path: string, bytes: Buffer, headers: Record<string, string>): Promise<{ status: number; body: any }> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      `${server.url}${path}`,
      { method: 'POST', headers: { 'Content-Type': 'application/json', 'Content-Length': String(bytes.length), ...headers } },
      (res) => {
        let out = '';
        res.on('data', (d) => (out += d));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: out ? JSON.parse(out) : null }));
      },
    );
    req.on('error', reject);
    req.end(bytes);
  });
}

/** Sends raw bytes and returns the raw HTTP answer (the connection is closed by the server). */
function raw(bytes: Buffer | string): Promise<string> {
  return new Promise((resolve, reject) => {
    const sock = net.connect(server.port, '127.0.0.1');
    let out = '';
    sock.on('data', (d) => (out += d.toString('latin1')));
    sock.on('end', () => resolve(out));
    sock.on('error', reject);
    sock.end(bytes);
  });
}

const bodyOf = (answer: string) => JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4));

describe('CSRF: the Origin check compares the scheme too', () => {
  test('a cookie-authenticated write with Origin https://host on an http service is 403; http://host passes', async () => {
    const u = await newUser(server, 'csrf');
    const host = new URL(server.url).host;
    const cookie = `tg_session=${u.token}`;
    const write = (origin: string) =>
      api(server).post('/v1/workspaces').set('Cookie', cookie).set('Origin', origin).send({ name: 'Via cookie' });
    expect((await write(`https://${host}`)).status).toBe(403);
    expect((await write(`http://${host}.evil.example`)).status).toBe(403);
    expect((await write(`http://${host}`)).status).toBe(201);
  });
});

describe('names', () => {
  test('NUL and other control characters in user, workspace and key names are 422 naming the field', async () => {
    const s = await api(server)
      .post('/v1/signup')
      .send({ email: uniqueEmail(), password: PASSWORD, name: 'Bad\u0000Name', acceptedPolicyVersion: policyVersionOf(server) });
    expect(s.status).toBe(422);
    expect(s.body.detail).toEqual([{ loc: ['body', 'name'], msg: 'name must not contain control characters', type: 'custom' }]);
    const u = await newUser(server, 'names');
    for (const name of ['Team\u001b[31m', 'Tab\there', 'Del\u007f', 'C1\u0085']) {
      const w = await api(server).post('/v1/workspaces').set(u.auth).send({ name });
      expect(w.status).toBe(422);
      expect(w.body.detail[0].loc).toEqual(['body', 'name']);
    }
    const k = await api(server).post(`/v1/workspaces/${u.personalWs}/keys`).set(u.auth).send({ name: 'key\u0000name' });
    expect(k.status).toBe(422);
    expect(k.body.detail[0].msg).toBe('name must not contain control characters');
    await fund(server, u.personalWs);
    const key = await api(server).post(`/v1/workspaces/${u.personalWs}/keys`).set(u.auth).send({ name: 'good name' });
    expect(key.status).toBe(201);
    const rename = await api(server)
      .patch(`/v1/workspaces/${u.personalWs}/keys/${key.body.keyId}`)
      .set(u.auth)
      .send({ name: 'bad\u0007bell' });
    expect(rename.status).toBe(422);
    expect(rename.body.detail[0].msg).toBe('name must not contain control characters');
    // Letters of any script and emoji are fine.
    expect((await api(server).post('/v1/workspaces').set(u.auth).send({ name: 'Équipe 東京 🚀' })).status).toBe(201);
  });
});

describe('bodies', () => {
  test('invalid UTF-8 is 422 with a detail, not silently replaced by U+FFFD', async () => {
    const bytes = Buffer.concat([
      Buffer.from('{"email":"a@example.com","password":"'),
      Buffer.from([0xff, 0xfe, 0xc3]),
      Buffer.from('xxxxxxxx","name":"n"}'),
    ]);
    const res = await postBytes('/v1/signup', bytes, {});
    expect(res.status).toBe(422);
    expect(res.body.detail).toEqual([{ loc: ['body'], msg: 'Body is not valid UTF-8', type: 'unicode_decode_error' }]);
  });

  test("a bad gzip body is 400 with our words, not zlib's", async () => {
    const res = await postBytes('/v1/login', Buffer.from('not gzip at all'), { 'Content-Encoding': 'gzip' });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ detail: 'Body could not be decompressed: it is not valid gzip data' });
    // A good gzip body still works.
    const email = uniqueEmail('gz');
    await signup(server, email);
    const ok = await postBytes('/v1/login', gzipSync(JSON.stringify({ email, password: PASSWORD })), { 'Content-Encoding': 'gzip' });
    expect(ok.status).toBe(200);
  });
});

describe('headers on answers', () => {
  test('the login answer (it carries the session token) is Cache-Control: no-store; JSON answers carry nosniff', async () => {
    const email = uniqueEmail('nostore');
    await signup(server, email);
    const res = await api(server).post('/v1/login').send({ email, password: PASSWORD });
    expect(res.status).toBe(200);
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.headers['x-content-type-options']).toBe('nosniff');
    for (const r of [await api(server).get('/v1/me'), await api(server).get('/healthz'), await api(server).get('/nope.json')]) {
      expect(r.headers['content-type']).toMatch(/application\/json/);
      expect(r.headers['x-content-type-options']).toBe('nosniff');
    }
    const token = await login(server, email);
    expect((await api(server).get('/v1/me').set('Authorization', `Bearer ${token}`)).headers['cache-control']).toBe('no-store');
  });
});

describe('requests Node refuses before the app still get a JSON detail', () => {
  test('a NUL in a header value: 400 with {"detail"}', async () => {
    const answer = await raw('GET /healthz HTTP/1.1\r\nHost: x\r\nX-Bad: a\u0000b\r\n\r\n');
    expect(answer).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n/);
    expect(answer).toMatch(/Content-Type: application\/json/);
    expect(bodyOf(answer)).toEqual({ detail: expect.stringMatching(/a header contains a character that is not allowed \(such as NUL/) });
  });

  test('a 100 KB header: 431 with {"detail"}', async () => {
    const answer = await raw(`GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(100_000)}\r\n\r\n`);
    expect(answer).toMatch(/^HTTP\/1\.1 431 /);
    expect(bodyOf(answer)).toEqual({ detail: 'Request headers too large' });
  });

  test('a malformed request line: 400 with {"detail"}', async () => {
    const answer = await raw('NOT A REQUEST\r\n\r\n');
    expect(answer).toMatch(/^HTTP\/1\.1 400 /);
    expect(bodyOf(answer)).toEqual({ detail: 'Malformed HTTP request' });
  });
});
