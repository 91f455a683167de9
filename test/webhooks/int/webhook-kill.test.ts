import { join } from 'node:path';
import { startTestServer, type TestServer } from '../../support/harness';
import { api, fund, newUser } from '../../accounts/e2e/helpers';
import { bundleChild, Child } from '../../support/child-process';
import { until } from '../../support/wait';
import { modules } from '../../../src/modules';
import { Receiver } from '../e2e/receiver';

/**
 * kill -9 the webhook worker mid-delivery: the receiver holds the first request of every event
 * open, the worker process is SIGKILLed while they hang, a new worker process starts. BullMQ hands
 * it the stalled jobs; every event reaches the receiver, verified with the standardwebhooks
 * package, at least once. The service (api, projector, reactors) runs in this process without its
 * own webhook worker.
 */
jest.setTimeout(180_000);
const CHILD = join(__dirname, 'support', 'webhook-worker-child.ts');
let bundle: { args: string[]; dispose(): void };
let server: TestServer;
let receiver: Receiver;
const children: Child[] = [];

beforeAll(async () => {
  bundle = bundleChild(CHILD);
  const noWorker = modules.map((m) => (m.name === 'webhooks' ? { ...m, startWorkers: undefined } : m));
  server = await startTestServer({ WEBHOOKS_ALLOW_PRIVATE_TARGETS: 'true', WEBHOOKS_RETRY_BASE_MS: '50' }, { modules: noWorker });
  receiver = new Receiver((nth) => (nth === 0 ? null : 204));
  await receiver.start();
});
afterAll(async () => {
  for (const c of children) await c.kill();
  await receiver?.close();
  await server?.close();
  bundle?.dispose();
});

function worker(): Child {
  const c = new Child(bundle.args, {
    REDIS_PREFIX: server.prefix,
    DATA_DIR: server.dataDir,
    REDIS_URL: server.services.config.REDIS_URL,
    WEBHOOKS_ALLOW_PRIVATE_TARGETS: 'true',
    WEBHOOKS_RETRY_BASE_MS: '50',
    LOG_LEVEL: 'silent',
    ROLE: 'worker',
  });
  children.push(c);
  return c;
}

test('a worker killed with SIGKILL mid-delivery loses no event: a new worker delivers each at least once', async () => {
  const u = await newUser(server, 'kill');
  await fund(server, u.personalWs);
  const ws = u.personalWs;
  const reg = await api(server)
    .post(`/v1/workspaces/${ws}/webhooks`)
    .set(u.auth)
    .send({ url: receiver.url, eventTypes: ['key.created'] });
  expect(reg.status).toBe(201);
  receiver.secret = reg.body.secret;

  const first = worker();
  await first.waitFor(/^STARTED$/);
  const keyIds: string[] = [];
  for (let i = 0; i < 3; i++) {
    const res = await api(server)
      .post(`/v1/workspaces/${ws}/keys`)
      .set(u.auth)
      .send({ name: `kill ${i}` });
    expect(res.status).toBe(201);
    keyIds.push(res.body.keyId);
  }
  // Every event's first request is in flight, held open by the receiver: kill the worker now.
  await until(() => new Set(receiver.received.map((r) => r.headers['webhook-id'])).size === 3, 60_000, 'three deliveries in flight');
  expect(receiver.received.every((r) => r.answered === 0)).toBe(true);
  await first.kill('SIGKILL');
  expect((await first.exited).signal).toBe('SIGKILL');

  const second = worker();
  await second.waitFor(/^STARTED$/);
  const delivered = () => receiver.received.filter((r) => r.answered === 204);
  await until(() => new Set(delivered().map((r) => r.headers['webhook-id'])).size === 3, 90_000, 'every event delivered after the kill');
  expect(delivered().every((r) => r.verified)).toBe(true);
  expect(
    delivered()
      .map((r) => JSON.parse(r.body).data.keyId)
      .sort(),
  ).toEqual([...keyIds].sort());
  const endpointId = reg.body.endpointId;
  await until(
    async () => {
      const res = await api(server).get(`/v1/workspaces/${ws}/webhooks/${endpointId}/deliveries`).set(u.auth);
      return res.body.deliveries.length === 3 && res.body.deliveries.every((d: { status: string }) => d.status === 'succeeded');
    },
    20_000,
    'the delivery log to show all three succeeded',
  );
});
