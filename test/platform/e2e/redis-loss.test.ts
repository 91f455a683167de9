/**
 * Redis loses every key (FLUSHDB, a restart without persistence) while nothing happens. The
 * projector notices without a new event and rebuilds the read models from the event store;
 * meanwhile /readyz says not ready and the API answers 503 with Retry-After instead of answering
 * from empty read models (a wrong 401, a wrong 402, a reservation against a wrong balance).
 *
 * The shared Redis is never flushed here: deleting every key under the server's own prefix is
 * the same loss for a service that lives under that prefix.
 */
import { randomUUID } from 'node:crypto';
import { streams } from '../../../src/platform/streams';
import { getBalance } from '../../../src/billing/projections/balances/queries';
import { startTestServer, TestServer } from '../../support/harness';
import { flushPrefix, TEST_REDIS_URL } from '../../support/redis';
import { authHeaders, fund, seedKey } from '../../inference/int/support/seed';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({ SWEEPER_ENABLED: 'false' });
});
afterAll(() => server?.close());

const body = JSON.stringify({ context: [{ type: 'Human', text: 'hi' }], config: 'service_3_pi', max_tokens: 2 });

test('an idle Redis that lost its data is rebuilt without traffic; meanwhile not ready and 503 + Retry-After', async () => {
  const s = server.services;
  const workspaceId = randomUUID();
  await s.store.append(
    streams.workspace(workspaceId),
    [{ id: randomUUID(), type: 'WorkspaceCreated', data: { workspaceId, name: 'Ops', personal: false, createdBy: 'u1' } }],
    { expectedRevision: 'no_stream' },
  );
  const key = await seedKey(s, { workspaceId });
  await fund(s, workspaceId, { usd: '100' });
  // some history, so that the rebuild takes a moment
  for (let i = 0; i < 40; i++) {
    await s.store.append(
      `noise-${randomUUID()}`,
      Array.from({ length: 100 }, () => ({ id: randomUUID(), type: 'NoiseRecorded', data: { i } })),
      { expectedRevision: 'no_stream' },
    );
  }
  const infer = () => fetch(`${server.url}/external/api/inference`, { method: 'POST', headers: authHeaders(key.secret), body });
  const first = await infer();
  expect(first.status).toBe(200);
  await s.progress.waitFor(await s.store.headPosition(), 5000);
  const balance = await getBalance(s.readModels, workspaceId);
  expect((await fetch(`${server.url}/readyz`)).status).toBe(200);

  await flushPrefix(TEST_REDIS_URL, server.prefix);

  // at once: not ready, and the hot path refuses with 503 rather than a wrong 401
  const ready = await fetch(`${server.url}/readyz`);
  expect(ready.status).toBe(503);
  expect(((await ready.json()) as any).checks.projections).toMatch(/^catching up: .*rebuilding .*keys/);
  const during = await infer();
  expect(during.status).toBe(503);
  expect(during.headers.get('retry-after')).toBe('2');
  expect(await during.json()).toEqual({ detail: expect.stringMatching(/read models are being rebuilt \(.*keys.*\)/) });

  // no request, no event: the projector rebuilds by itself
  const deadline = Date.now() + 20_000;
  while ((await fetch(`${server.url}/readyz`)).status !== 200) {
    if (Date.now() > deadline) throw new Error('never ready again');
    await new Promise((r) => setTimeout(r, 100));
  }
  expect(await getBalance(s.readModels, workspaceId)).toEqual(balance);
  const after = await infer();
  expect(after.status).toBe(200);
});
