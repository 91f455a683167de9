import { randomUUID } from 'node:crypto';
import type { Queue } from 'bullmq';
import { usd } from '../../../src/domain/money';
import { streams } from '../../../src/domain/streams';
import type { RecordedEvent } from '../../../src/eventstore/port';
import { autoReloadReactor, ReloadJobData, reloadQueue } from '../../../src/workers/auto-reload';
import { startTestServer, TestServer } from '../../support/harness';
import { api, billing, fundedUser, TestUser } from './helpers';

/**
 * The reactor's filter (the domain's reloadBlockerOf over the projected settings and balance): it
 * enqueues no job when the rules say no reload. Its own queue (under the server's prefix, no worker)
 * holds whatever it enqueues.
 */
let server: TestServer;
let queue: Queue<ReloadJobData>;
beforeAll(async () => {
  server = await startTestServer();
  queue = reloadQueue({ redis: await server.services.connectRedis('reactor-test', { maxRetriesPerRequest: null }), prefix: `${server.prefix}reactor-test` });
});
afterAll(async () => {
  await queue?.close();
  await server?.close();
});

const reactor = () => autoReloadReactor({ readModels: server.services.readModels, queue: async () => queue, now: () => new Date() });
const debitSeen = (ws: string) => ({ id: randomUUID(), type: 'TokensDebited', data: { workspaceId: ws } }) as unknown as RecordedEvent;
const jobs = async () => Object.values(await queue.getJobCounts('wait', 'delayed', 'active', 'completed', 'failed')).reduce((a, b) => a + b, 0);

async function debit(ws: string, amountNano: bigint) {
  const requestId = randomUUID();
  const data = { requestId, workspaceId: ws, keyId: 'key-1', config: 'service_3_pi', inputTokens: 1, outputTokens: 1, inputPriceNanoUsd: '2500', outputPriceNanoUsd: '10000', amountNanoUsd: amountNano.toString() };
  const r = await server.services.store.append(streams.inference(requestId), [{ id: randomUUID(), type: 'TokensDebited', data }], { expectedRevision: 'no_stream' });
  await server.services.progress.waitFor(r.position, 5000);
}

async function until(fn: () => Promise<boolean>, ms = 10_000) {
  const end = Date.now() + ms;
  while (!(await fn())) {
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 50));
  }
}

const putAutoReload = (u: TestUser, ws: string, body: Record<string, unknown>) =>
  api(server).put(`/v1/workspaces/${ws}/billing/auto-reload`).set(u.auth).send(body);

describe('auto-reload reactor', () => {
  test('enqueues nothing for a low balance when auto-reload is off', async () => {
    const u = await fundedUser(server);
    await debit(u.personalWs, usd(99)); // 100 → 1, far below any threshold
    await reactor().react(debitSeen(u.personalWs));
    expect(await jobs()).toBe(0);
  });

  test('enqueues nothing once the monthly cap is reached', async () => {
    const u = await fundedUser(server);
    const ws = u.personalWs;
    expect((await putAutoReload(u, ws, { enabled: true, threshold: '50', amount: '50', monthlyCap: '50' })).status).toBe(200);
    await debit(ws, usd(60)); // 100 → 40: the service's own worker reloads 50 → 90 (cap used up)
    await until(async () => (await billing(server, u, ws)).body.balance === '90');
    await debit(ws, usd(50)); // 90 → 40: below the threshold, but over the cap
    await reactor().react(debitSeen(ws));
    expect(await jobs()).toBe(0);
  });
});
