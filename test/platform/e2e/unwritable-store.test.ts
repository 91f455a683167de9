/**
 * The event store stops taking writes (here: another connection holds SQLite's write lock, as a
 * full disk or a stuck writer would) while a non-streaming request is generating. The caller gets
 * 503 + Retry-After, /readyz says the store is not writable, and — the billing rule — the caller
 * who got 503 pays nothing: once the store takes writes again the request is closed as
 * `store_unavailable` with a zero debit and its hold released.
 */
import Database from 'better-sqlite3';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { streams } from '../../../src/platform/streams';
import { getBalance } from '../../../src/billing/projections/balances/queries';
import { Reservations } from '../../../src/billing/projections/balances/reservations';
import { startTestServer, TestServer } from '../../support/harness';
import { authHeaders, fund, seedKey } from '../../inference/int/support/seed';
import { until } from '../../support/wait';

jest.setTimeout(120_000);

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({ SWEEPER_ENABLED: 'false', DEMO_TOKEN_DELAY_MS: '200' });
});
afterAll(() => server?.close());

test('a reply that cannot be recorded: 503, not ready, and the caller pays nothing', async () => {
  const s = server.services;
  const key = await seedKey(s);
  await fund(s, key.workspaceId, { usd: '10' });
  await s.progress.waitFor(await s.store.headPosition(), 5000);
  const balance = await getBalance(s.readModels, key.workspaceId);
  const headBefore = await s.store.headPosition();

  const body = JSON.stringify({ context: [{ type: 'Human', text: 'Tell me a story' }], config: 'service_3_pi', max_tokens: 6 });
  // InferenceRequested is written; then, while the model generates, the store stops taking writes.
  // The lock is taken as soon as that append returns (polling for the event could find it only after
  // the 1.2 s reply was recorded, on a loaded machine).
  const locker = new Database(join(server.dataDir, 'events.sqlite'));
  let locked: () => void;
  const lockTaken = new Promise<void>((r) => (locked = r));
  const append = s.store.append;
  s.store.append = async function (this: typeof s.store, ...args: Parameters<typeof append>) {
    const r = await append.apply(this, args);
    if (args[1].some((e) => e.type === 'InferenceRequested')) {
      s.store.append = append;
      locker.prepare('BEGIN IMMEDIATE').run();
      locked();
    }
    return r;
  } as typeof append;
  const answer = fetch(`${server.url}/external/api/inference`, { method: 'POST', headers: authHeaders(key.secret), body });
  let res: Response;
  try {
    await lockTaken;
    res = await answer;
    expect(res.status).toBe(503);
    expect(res.headers.get('retry-after')).toBe('1');
    expect(await res.json()).toEqual({ detail: expect.stringContaining('cannot be written') });
    const ready = await fetch(`${server.url}/readyz`);
    expect(ready.status).toBe(503);
    expect(((await ready.json()) as any).checks.eventStore).toMatch(/^not writable: the last append failed at .*event store write failed/);
  } finally {
    s.store.append = append;
    if (locker.inTransaction) locker.prepare('ROLLBACK').run();
    locker.close();
  }

  // the store is back: the request is closed with nothing billed
  const requested = (await s.store.readAll({ fromPosition: headBefore })).find((e) => e.type === 'InferenceRequested')!;
  const requestId = (requested.data as { requestId: string }).requestId;
  const events = await until(
    async () => {
      const e = await s.store.readStream(streams.inference(requestId));
      return e.length === 3 ? e : null;
    },
    40_000,
    'the request to be closed',
  );
  expect(events.map((e) => e.type)).toEqual(['InferenceRequested', 'InferenceCompleted', 'TokensDebited']);
  expect(events[1].data).toMatchObject({ finishReason: 'store_unavailable', inputTokens: 0, outputTokens: 0 });
  expect(events[2].data).toMatchObject({ amountNanoUsd: '0', inputTokens: 0, outputTokens: 0 });
  await s.progress.waitFor(events[2].position, 5000);
  expect(await getBalance(s.readModels, key.workspaceId)).toEqual(balance);
  expect(await new Reservations(s.redis, s.ks).held(key.workspaceId)).toBe(0n);
  expect((await fetch(`${server.url}/readyz`)).status).toBe(200);
});

test('/readyz names a data directory that takes no writes, even with no traffic', async () => {
  // An immutable directory: even root cannot create a file in it (as on a full or read-only disk).
  const dir = server.dataDir;
  const made = spawnSync('chattr', ['+i', dir]);
  if (made.status !== 0) {
    console.warn(`skipped: chattr +i is not supported here (${String(made.stderr).trim()})`);
    return;
  }
  try {
    const deadline = Date.now() + 15_000;
    let last: any;
    for (;;) {
      const res = await fetch(`${server.url}/readyz`);
      last = { status: res.status, body: await res.json() };
      if (last.status === 503) break;
      if (Date.now() > deadline) throw new Error(`still ready: ${JSON.stringify(last)}`);
      await new Promise((r) => setTimeout(r, 200));
    }
    expect(last.body.checks.eventStore).toMatch(/^not writable: DATA_DIR .* cannot be written: /);
  } finally {
    spawnSync('chattr', ['-i', dir]);
  }
  const deadline = Date.now() + 15_000;
  while ((await fetch(`${server.url}/readyz`)).status !== 200) {
    if (Date.now() > deadline) throw new Error('never ready again');
    await new Promise((r) => setTimeout(r, 200));
  }
});
