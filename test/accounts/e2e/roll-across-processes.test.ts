import { ChildProcess, spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { startTestServer, TestServer } from '../../support/harness';
import { TEST_REDIS_URL } from '../../support/redis';
import { BUNDLE_NODE_PATH, bundleChild } from '../../support/child-process';
import { api, createWorkspace, fund, newUser, TestUser } from './helpers';
import { freePort } from '../../support/free-port';

/**
 * The old secret of a rolled key must stop at the end of the grace period in every api process,
 * not only in the one that handled the roll. Process A (this one, role all) rolls the key; process
 * B (a separate `tollgate serve --role api` over the same event store and Redis) serves the calls.
 */
/** The shipped CLI as bin/tollgate.js starts it, as one bundle (test/support/child-process.ts) rather than under tsx. */
const CLI = resolve(__dirname, '../../support/fixtures/shipped-cli.ts');

let a: TestServer;
let b: ChildProcess;
let bUrl: string;
let ann: TestUser;
let ws: string;

async function startApiProcess(): Promise<void> {
  const port = await freePort();
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env))
    if (v !== undefined && !/^(PORT|HOST|ROLE|EVENT_STORE|EVENTSTORE_|REDIS_|DATA_DIR|USAGE_POLICY)/.test(k)) env[k] = v;
  Object.assign(env, {
    NODE_PATH: BUNDLE_NODE_PATH,
    DATA_DIR: a.dataDir,
    REDIS_URL: TEST_REDIS_URL,
    REDIS_PREFIX: a.prefix,
    PORT: String(port),
    HOST: '127.0.0.1',
    LOG_LEVEL: 'silent',
    NODE_ENV: 'test',
  });
  b = spawn(process.execPath, [...bundleChild(CLI).args, 'serve', '--role', 'api'], { env, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  b.stderr!.on('data', (d) => (stderr += d));
  bUrl = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (b.exitCode !== null) throw new Error(`api process exited: ${stderr}`);
    try {
      if ((await fetch(`${bUrl}/healthz`)).ok) return;
    } catch {
      /* not listening yet */
    }
    if (Date.now() > deadline) throw new Error(`api process did not start: ${stderr}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

beforeAll(async () => {
  a = await startTestServer();
  await startApiProcess();
  ann = await newUser(a, 'ann');
  ws = await createWorkspace(a, ann, 'Team');
  await fund(a, ws);
});
afterAll(async () => {
  if (b && b.exitCode === null) {
    const exited = new Promise((r) => b.once('exit', r));
    b.kill('SIGTERM');
    await exited;
  }
  await a?.close();
});

/** One inference call to process B; the times the client sent it and got the answer. */
async function callB(secret: string): Promise<{ status: number; detail?: string; sent: number; answered: number }> {
  const sent = Date.now();
  const res = await fetch(`${bUrl}/external/api/inference`, {
    method: 'POST',
    headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
    body: JSON.stringify({ context: [{ type: 'Human', text: 'Hi' }], config: 'service_3_productivity', max_tokens: 2 }),
  });
  const body = (await res.json()) as { detail?: string };
  return { status: res.status, detail: body.detail, sent, answered: Date.now() };
}

async function newKey(name: string) {
  const res = await api(a).post(`/v1/workspaces/${ws}/keys`).set(ann.auth).send({ name });
  expect(res.status).toBe(201);
  return res.body as { keyId: string; secret: string };
}

test('rolled without grace in process A: process B refuses the old secret on the next request', async () => {
  const key = await newKey('no grace');
  expect((await callB(key.secret)).status).toBe(200);
  const rolled = await api(a).post(`/v1/workspaces/${ws}/keys/${key.keyId}/roll`).set(ann.auth).send({});
  expect(rolled.status).toBe(200);
  expect((await callB(key.secret)).status).toBe(401);
  expect((await callB(rolled.body.secret)).status).toBe(200);
});

test('rolled with a grace period in process A: process B serves both secrets until it ends, then answers 401 to the old one', async () => {
  const key = await newKey('with grace');
  const rolled = await api(a).post(`/v1/workspaces/${ws}/keys/${key.keyId}/roll`).set(ann.auth).send({ gracePeriodSeconds: 3 });
  expect(rolled.status).toBe(200);
  const until = Date.parse(rolled.body.previousSecretValidUntil);
  expect(until - Date.parse(rolled.body.rolledAt)).toBe(3000);
  expect((await callB(rolled.body.secret)).status).toBe(200);

  // Wait until shortly before the end, then call B with the old secret every 25 ms until it refuses.
  // Paced, because back to back on a fast machine the calls would pass the key's rate limit
  // (RATE_LIMIT_PER_MINUTE, 100) inside the 700 ms and the refusal would be a 429.
  await new Promise((r) => setTimeout(r, Math.max(0, until - 700 - Date.now())));
  const calls = [];
  for (;;) {
    const c = await callB(key.secret);
    calls.push(c);
    if (c.status !== 200 || c.sent > until + 2000) break;
    await new Promise((r) => setTimeout(r, 25));
  }
  const ok = calls.filter((c) => c.status === 200);
  const refused = calls.find((c) => c.status !== 200)!;
  expect(ok.length).toBeGreaterThan(0); // it did still work inside the grace period
  expect(refused).toBeDefined();
  expect(refused.status).toBe(401);
  expect(refused.detail).toBe('Invalid API key: this secret was replaced when the key was rolled');
  // Every success was sent before the end; the refusal came once it had passed, and promptly.
  for (const c of ok) expect(c.sent).toBeLessThan(until);
  expect(refused.answered).toBeGreaterThanOrEqual(until);
  expect(refused.sent).toBeLessThan(until + 500);
  // The new secret still works, in both processes, for the same key id.
  expect((await callB(rolled.body.secret)).status).toBe(200);
  const requested = (await a.services.store.readAll()).filter(
    (e) => e.type === 'InferenceRequested' && (e.data as { workspaceId: string }).workspaceId === ws,
  );
  const ids = new Set(requested.slice(-ok.length - 2).map((e) => (e.data as { keyId: string }).keyId));
  expect([...ids]).toEqual([key.keyId]);
});
