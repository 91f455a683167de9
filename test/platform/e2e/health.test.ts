import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqliteEventStore } from '../../../src/platform/eventstore/sqlite';
import { createLogger } from '../../../src/platform/log';
import { ProjectionRunner } from '../../../src/platform/projections/runner';
import { appendFx, fxExpected, fxLedger, fxModule, fxSnapshot } from '../../support/fixtures/projections';
import { healthz, readyz } from '../../../src/platform/http/system/schemas';
import { expectMatchesContract } from '../../support/contract';
import { startTestServer, TestServer } from '../../support/harness';
import { until } from '../../support/wait';

const servers: TestServer[] = [];
const dirs: string[] = [];
afterAll(async () => {
  for (const s of servers) await s.close();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

async function serverWith(overrides: Record<string, string>, modules = [fxModule()]): Promise<TestServer> {
  const s = await startTestServer(overrides, { modules });
  servers.push(s);
  return s;
}

/** A data dir whose store already holds `n` fixture events (the head the service sees at start). */
async function dataDirWithEvents(n: number): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-e2e-health-'));
  dirs.push(dir);
  const store = new SqliteEventStore({ file: join(dir, 'events.sqlite') });
  await appendFx(store, n, 10);
  await store.close();
  return dir;
}

async function get(url: string): Promise<{ status: number; body: any }> {
  const res = await fetch(url);
  return { status: res.status, body: await res.json() };
}

describe('system routes', () => {
  test('/healthz and /readyz answer 200 on a fresh service; unknown paths 404 with a detail', async () => {
    const s = await serverWith({});
    await expectMatchesContract(await fetch(`${s.url}/healthz`), healthz);
    await expectMatchesContract(await fetch(`${s.url}/readyz`), readyz);
    expect(await get(`${s.url}/healthz`)).toEqual({ status: 200, body: { status: 'ok' } });
    expect(await get(`${s.url}/readyz`)).toEqual({
      status: 200,
      body: { status: 'ready', checks: { eventStore: 'ok', redis: 'ok', projections: 'ok' } },
    });
    const missing = await fetch(`${s.url}/no/such/path`);
    expect(missing.status).toBe(404);
    expect(missing.headers.get('content-type')).toMatch(/application\/json/);
    expect(await missing.json()).toEqual({ detail: 'Not Found' });
    expect((await fetch(`${s.url}/healthz`, { method: 'POST' })).status).toBe(404);
  });

  test('/readyz is 503 naming the projections while they are behind the head seen at start, then 200', async () => {
    const dataDir = await dataDirWithEvents(40);
    let blocked = true;
    // The projection cannot get past event 21 until released: the runner retries with backoff.
    const projection = fxLedger('fx-ledger', { failOn: (e) => blocked && e.position >= 21n });
    const s = await serverWith({ DATA_DIR: dataDir, PROJECTION_BATCH_SIZE: '5' }, [fxModule([projection])]);
    const notReady = await get(`${s.url}/readyz`);
    expect(notReady.status).toBe(503);
    expect(notReady.body.status).toBe('not ready');
    expect(notReady.body.checks.eventStore).toBe('ok');
    expect(notReady.body.checks.redis).toBe('ok');
    expect(notReady.body.checks.projections).toMatch(/^catching up: at position \d+ of 40/);
    // the process itself is up all along
    expect((await get(`${s.url}/healthz`)).status).toBe(200);

    blocked = false;
    await until(async () => (await get(`${s.url}/readyz`)).status === 200, 15_000);
    const { gen: _g, ...model } = await fxSnapshot(s.services.redis, s.services.ks);
    expect(model).toEqual(fxExpected(await s.services.store.readAll()));
  });

  test('an api-only process is ready once the projector (elsewhere) reaches the head it saw at start', async () => {
    const dataDir = await dataDirWithEvents(25);
    const s = await serverWith({ DATA_DIR: dataDir, ROLE: 'api' });
    expect(s.running.runner).toBeUndefined();
    const before = await get(`${s.url}/readyz`);
    expect(before.status).toBe(503);
    expect(before.body.checks.projections).toMatch(/^catching up: at position 0 of 25 \(rebuilding fx-ledger/);

    // the projector role, as another process would run it, over the same store and prefix
    const runner = new ProjectionRunner({
      store: s.services.store,
      redis: await s.services.connectRedis('test-projector'),
      ks: s.services.ks,
      projections: [fxLedger()],
      batchSize: 10,
      log: createLogger('silent'),
    });
    await runner.start();
    try {
      await until(async () => (await get(`${s.url}/readyz`)).status === 200, 15_000);
    } finally {
      await runner.stop();
    }
  });

  test('/readyz names an event store or a Redis that stopped answering', async () => {
    const s = await serverWith({});
    expect((await get(`${s.url}/readyz`)).status).toBe(200);
    s.services.redis.disconnect();
    const noRedis = await get(`${s.url}/readyz`);
    expect(noRedis.status).toBe(503);
    await expectMatchesContract(await fetch(`${s.url}/readyz`), readyz);
    expect(noRedis.body.checks.redis).toMatch(/^unreachable: /);
    expect(noRedis.body.checks.eventStore).toBe('ok');
    await s.services.redis.connect(); // back, so that close() shuts down an open connection
    expect((await get(`${s.url}/readyz`)).status).toBe(200);

    const t = await serverWith({});
    await t.services.store.close();
    const noStore = await get(`${t.url}/readyz`);
    expect(noStore.status).toBe(503);
    expect(noStore.body.checks.eventStore).toMatch(/^unreachable: .*closed/);
    expect((await get(`${t.url}/healthz`)).status).toBe(200);
  });
});
