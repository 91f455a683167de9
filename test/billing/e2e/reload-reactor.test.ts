import { randomUUID } from 'node:crypto';
import type { Queue } from 'bullmq';
import { usd } from '../../../src/platform/money';
import type { Recorded } from '../../../src/platform/projections/projection';
import type { TokensDebited } from '../../../src/inference/events';
import { autoReloadReactor, ReloadJobData, reloadQueue } from '../../../src/billing/workers/auto-reload';
import { startTestServer, TestServer } from '../../support/harness';
import { api, billing, fundedUser, TestUser } from './helpers';
import { debit } from '../../support/debit';
import { until } from '../../support/wait';

/**
 * The reactor's filter (the domain's reloadBlockerOf over the projected settings and balance): it
 * enqueues no job when the rules say no reload. Its own queue (under the server's prefix, no worker)
 * holds whatever it enqueues.
 */
let server: TestServer;
let queue: Queue<ReloadJobData>;
beforeAll(async () => {
  server = await startTestServer();
  queue = reloadQueue({
    redis: await server.services.connectRedis('reactor-test', { maxRetriesPerRequest: null }),
    prefix: `${server.prefix}reactor-test`,
  });
});
afterAll(async () => {
  await queue?.close();
  await server?.close();
});

const reactor = () => autoReloadReactor({ readModels: server.services.readModels, queue: async () => queue, now: () => new Date() });
const debitSeen = (ws: string) =>
  ({ id: randomUUID(), type: 'TokensDebited', data: { workspaceId: ws } }) as unknown as Recorded<TokensDebited>;
const jobs = async () =>
  Object.values(await queue.getJobCounts('wait', 'delayed', 'active', 'completed', 'failed')).reduce((a, b) => a + b, 0);

const putAutoReload = (u: TestUser, ws: string, body: Record<string, unknown>) =>
  api(server).put(`/v1/workspaces/${ws}/billing/auto-reload`).set(u.auth).send(body);

describe('auto-reload reactor', () => {
  test('enqueues nothing for a low balance when auto-reload is off', async () => {
    const u = await fundedUser(server);
    await debit(server.services, u.personalWs, { amountNanoUsd: usd(99) }); // 100 → 1, far below any threshold
    await reactor().react(debitSeen(u.personalWs));
    expect(await jobs()).toBe(0);
  });

  test('reads no balance when the settings alone rule a reload out (auto-reload off)', async () => {
    const u = await fundedUser(server);
    await debit(server.services, u.personalWs, { amountNanoUsd: usd(99) });
    const rm = server.services.readModels;
    const read = jest.spyOn(rm, 'read');
    try {
      await autoReloadReactor({ readModels: rm, queue: async () => queue, now: () => new Date() }).react(debitSeen(u.personalWs));
      expect(read.mock.calls.map(([name]) => name)).toEqual(['billing-settings']);
    } finally {
      read.mockRestore();
    }
    expect(await jobs()).toBe(0);
  });

  test('enqueues nothing once the monthly cap is reached', async () => {
    const u = await fundedUser(server);
    const ws = u.personalWs;
    expect((await putAutoReload(u, ws, { enabled: true, threshold: '50', amount: '50', monthlyCap: '50' })).status).toBe(200);
    await debit(server.services, ws, { amountNanoUsd: usd(60) }); // 100 → 40: the service's own worker reloads 50 → 90 (cap used up)
    await until(async () => (await billing(server, u, ws)).body.balance === '90');
    await debit(server.services, ws, { amountNanoUsd: usd(50) }); // 90 → 40: below the threshold, but over the cap
    await reactor().react(debitSeen(ws));
    expect(await jobs()).toBe(0);
  });
});
