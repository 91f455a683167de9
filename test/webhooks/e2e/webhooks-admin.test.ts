import { randomUUID } from 'node:crypto';
import { startTestServer, type TestServer } from '../../support/harness';
import { api, fund, newUser as signedUp, type TestUser } from '../../accounts/e2e/helpers';
import { debit } from '../../support/debit';
import { until } from '../../support/wait';
import { expectMatchesContract } from '../../support/contract';
import * as c from '../../../src/webhooks/routes/webhook-schemas';
import { balanceAlertReactor, crossingEventId } from '../../../src/webhooks/balance-alerts/reactor';
import { runReplay } from '../../../src/webhooks/workers/delivery/replay';
import { webhookQueue, WEBHOOK_QUEUE } from '../../../src/webhooks/workers/delivery/queue';
import { bullPrefix } from '../../../src/platform/bullmq';
import { usd } from '../../../src/platform/money';
import { streams } from '../../../src/platform/streams';
import { Receiver } from './receiver';

/**
 * What admins do with webhooks beyond registering: the low-balance alert, re-enabling a disabled
 * endpoint, replaying from a point in time. The whole service in-process, real Redis and BullMQ,
 * receivers on 127.0.0.1 verifying every delivery with the standardwebhooks package.
 */
let server: TestServer;
const receivers: Receiver[] = [];
beforeAll(async () => {
  server = await startTestServer({
    WEBHOOKS_ALLOW_PRIVATE_TARGETS: 'true',
    WEBHOOKS_RETRY_BASE_MS: '20',
    WEBHOOKS_MAX_ATTEMPTS: '3',
    WEBHOOKS_MAX_REPLAYS_PER_DAY: '2',
  });
});
afterAll(async () => {
  await Promise.all(receivers.map((r) => r.close()));
  await server?.close();
});

async function receiver(answer: (nth: number) => number | null = () => 204): Promise<Receiver> {
  const r = new Receiver(answer);
  await r.start();
  receivers.push(r);
  return r;
}

async function newUser(label: string): Promise<TestUser> {
  const u = await signedUp(server, label);
  await fund(server, u.personalWs);
  return u;
}

async function register(u: TestUser, r: Receiver, eventTypes: string[]): Promise<string> {
  const res = await api(server).post(`/v1/workspaces/${u.personalWs}/webhooks`).set(u.auth).send({ url: r.url, eventTypes });
  expect(res.status).toBe(201);
  r.secret = res.body.secret;
  return res.body.endpointId as string;
}

const createKey = async (u: TestUser, name: string) => {
  const res = await api(server).post(`/v1/workspaces/${u.personalWs}/keys`).set(u.auth).send({ name });
  expect(res.status).toBe(201);
  return res.body.keyId as string;
};

const deposit = async (ws: string, amountUsd: number) => {
  const r = await server.services.store.append(
    streams.billing(ws),
    [
      {
        id: randomUUID(),
        type: 'DepositSucceeded',
        data: {
          workspaceId: ws,
          depositId: randomUUID(),
          amountNanoUsd: usd(amountUsd).toString(),
          paymentIntentId: 'pi_test',
          by: 'test',
        },
      },
    ],
    { expectedRevision: 'any' },
  );
  await server.services.progress.waitFor(r.position, 5000);
};

describe('balance below a threshold', () => {
  test('one alert per crossing, not per debit below it; re-armed by a deposit; deterministic ids', async () => {
    const u = await newUser('threshold'); // balance 100
    const ws = u.personalWs;
    const r = await receiver();
    await register(u, r, ['balance.below_threshold']);
    const set = await api(server).put(`/v1/workspaces/${ws}/webhooks/balance-threshold`).set(u.auth).send({ threshold: '90.00' });
    expect([set.status, set.body]).toEqual([200, { threshold: '90' }]);
    await expectMatchesContract(set, c.setBalanceThreshold);
    const listed = await api(server).get(`/v1/workspaces/${ws}/webhooks`).set(u.auth);
    expect(listed.body.balanceThreshold).toBe('90');
    await expectMatchesContract(listed, c.listEndpoints);

    const d = (n: number) => debit(server.services, ws, { amountNanoUsd: usd(n) });
    await d(5); // 95
    await d(5); // 90: at the threshold, not below
    const first = await d(5); // 85: crosses
    await d(5); // 80: still below, no second alert
    await deposit(ws, 20); // 100: re-armed
    const second = await d(15); // 85: crosses again
    await until(() => r.received.length >= 2, 20_000, 'two alerts');

    const alerts = await until(
      async () => {
        const evs = await server.services.store.readStream(streams.balanceAlerts(ws));
        return evs.length === 2 ? evs : null;
      },
      10_000,
      'two stored crossings',
    );
    const debitIds = async (requestId: string) => (await server.services.store.readStream(streams.inference(requestId)))[0].id;
    expect(alerts.map((e) => e.id)).toEqual([crossingEventId(await debitIds(first)), crossingEventId(await debitIds(second))]);
    expect(r.received.map((x) => x.headers['webhook-id'])).toEqual(alerts.map((e) => e.id));
    expect(r.received.every((x) => x.verified)).toBe(true);
    const bodies = r.received.map((x) => JSON.parse(x.body));
    expect(bodies.map((b) => [b.type, b.data.thresholdNanoUsd, b.data.balanceNanoUsd])).toEqual([
      ['balance.below_threshold', usd(90).toString(), usd(85).toString()],
      ['balance.below_threshold', usd(90).toString(), usd(85).toString()],
    ]);

    // The reactor sees the crossing debit again (a restart before its checkpoint): nothing new is stored.
    const debitEvent = (await server.services.store.readStream(streams.inference(first)))[0];
    await balanceAlertReactor(server.services).react(debitEvent as never);
    expect(await server.services.store.readStream(streams.balanceAlerts(ws))).toHaveLength(2);

    // Turned off: a later dip stores nothing.
    const off = await api(server).put(`/v1/workspaces/${ws}/webhooks/balance-threshold`).set(u.auth).send({ threshold: null });
    expect(off.body).toEqual({ threshold: null });
    await deposit(ws, 100);
    await d(100);
    expect(await server.services.store.readStream(streams.balanceAlerts(ws))).toHaveLength(2);
  });

  test('a bad threshold is refused with 422 naming it; nothing is written', async () => {
    const u = await signedUp(server, 'bad-threshold');
    const head = await server.services.store.headPosition();
    for (const threshold of ['abc', '-5', '0', '1e3', '1.1234567891', 12.5, '', ' 5']) {
      const res = await api(server).put(`/v1/workspaces/${u.personalWs}/webhooks/balance-threshold`).set(u.auth).send({ threshold });
      expect([threshold, res.status, res.body.detail?.[0]?.loc]).toEqual([threshold, 422, ['body', 'threshold']]);
      expect(res.body.detail[0].msg).toMatch(/threshold must be/);
    }
    const missing = await api(server).put(`/v1/workspaces/${u.personalWs}/webhooks/balance-threshold`).set(u.auth).send({});
    expect(missing.status).toBe(422);
    expect(await server.services.store.headPosition()).toBe(head);
  });
});

describe('re-enabling a disabled endpoint', () => {
  test('an endpoint disabled after failing is enabled by an admin and gets events again', async () => {
    const u = await newUser('reenable');
    const ws = u.personalWs;
    const r = await receiver(() => 500);
    const endpointId = await register(u, r, ['key.created']);
    await createKey(u, 'while failing');
    await until(
      async () => (await api(server).get(`/v1/workspaces/${ws}/webhooks`).set(u.auth)).body.endpoints[0].status === 'disabled',
      20_000,
      'disabled',
    );
    const disabledNotices = async () =>
      ((await api(server).get('/v1/me').set(u.auth)).body.notices as Array<{ kind: string; message: string }>).filter(
        (n) => n.kind === 'webhook_endpoint_disabled',
      );
    await until(async () => (await disabledNotices()).length === 1, 20_000, 'the disabled notice');
    const notFound = await api(server).post(`/v1/workspaces/${ws}/webhooks/whe_nope/enable`).set(u.auth);
    expect(notFound.status).toBe(404);

    r.answer = () => 204;
    const res = await api(server).post(`/v1/workspaces/${ws}/webhooks/${endpointId}/enable`).set(u.auth);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ endpointId, status: 'enabled', disabledReason: null });
    await expectMatchesContract(res, c.enableEndpoint);
    // Finding F-6: enabled again, the notice is gone from /v1/me.
    expect(await disabledNotices()).toEqual([]);
    // A second click writes nothing.
    const head = await server.services.store.headPosition();
    expect((await api(server).post(`/v1/workspaces/${ws}/webhooks/${endpointId}/enable`).set(u.auth)).status).toBe(200);
    expect(await server.services.store.headPosition()).toBe(head);

    const keyId = await createKey(u, 'after enabling');
    await until(() => r.received.some((x) => x.answered === 204), 20_000, 'a delivery after enabling');
    const ok = r.received.filter((x) => x.answered === 204);
    expect(ok).toHaveLength(1);
    expect(JSON.parse(ok[0].body).data.keyId).toBe(keyId);
    expect(ok[0].verified).toBe(true);
    const types = (await server.services.store.readStream(`webhooks-${ws}`)).map((e) => e.type);
    expect(types).toEqual(['WebhookEndpointRegistered', 'WebhookEndpointDisabled', 'WebhookEndpointEnabled']);
  });
});

describe('replay from a point in time', () => {
  test('every event of the endpoint’s types since T is sent again with its own webhook-id; asking again queues nothing', async () => {
    const u = await newUser('replay');
    const ws = u.personalWs;
    const r = await receiver();
    const endpointId = await register(u, r, ['key.created']);
    await createKey(u, 'before T');
    await until(() => r.received.length === 1, 20_000, 'the first delivery');
    const since = new Date().toISOString();
    await until(async () => Date.now() > Date.parse(since), 1000, 'the clock to pass T');
    const keys = [await createKey(u, 'after T 1'), await createKey(u, 'after T 2')];
    await until(() => r.received.length === 3, 20_000, 'the live deliveries');
    const liveIds = r.received.slice(1).map((x) => x.headers['webhook-id']);

    const path = `/v1/workspaces/${ws}/webhooks/${endpointId}/replays`;
    const started = await api(server).post(path).set(u.auth).send({ since });
    expect(started.status).toBe(202);
    await expectMatchesContract(started, c.startReplay);
    const { replayId } = started.body;
    expect(replayId).toMatch(/^whr_/);
    const done = await until(
      async () => {
        const res = await api(server).get(`${path}/${replayId}`).set(u.auth);
        return res.body.status === 'enqueued' && res.body.succeeded === 2 ? res : null;
      },
      20_000,
      'the replay to deliver both',
    );
    await expectMatchesContract(done, c.getReplay);
    expect(done.body).toMatchObject({ matched: 2, succeeded: 2, failed: 0, since });
    const replayed = r.received.slice(3);
    expect(replayed.map((x) => x.headers['webhook-id']).sort()).toEqual([...liveIds].sort());
    expect(replayed.map((x) => JSON.parse(x.body).data.keyId).sort()).toEqual([...keys].sort());
    expect(replayed.every((x) => x.verified)).toBe(true);

    // Asked again (a retried request): the same replay, 200, nothing new queued.
    const again = await api(server).post(path).set(u.auth).send({ since });
    expect([again.status, again.body.replayId]).toEqual([200, replayId]);
    // The scan run again from the start (a worker killed mid-scan): its enqueue ledger stops every duplicate.
    const queueRedis = await server.services.connectRedis('test-queue', { maxRetriesPerRequest: null });
    const queue = webhookQueue({
      redis: queueRedis,
      prefix: bullPrefix(server.services.config, WEBHOOK_QUEUE),
      config: server.services.config,
    });
    // With the finished jobs' records gone (BullMQ keeps a bounded number), job ids alone would not stop a duplicate.
    await queue.clean(0, 10_000, 'completed');
    await server.services.redis.hset(server.services.ks.shared('webhooks', 'replay', replayId), { status: 'scanning', scannedTo: '' });
    expect(
      await runReplay(
        { store: server.services.store, redis: server.services.redis, ks: server.services.ks, queue },
        { data: { workspaceId: ws, endpointId, replayId } },
      ),
    ).toBe('enqueued');
    await until(
      async () => {
        const n = await queue.getJobCounts('waiting', 'active', 'delayed');
        return n.waiting + n.active + n.delayed === 0;
      },
      10_000,
      'the queue to drain',
    );
    expect(r.received).toHaveLength(5);
    await queue.close();
    queueRedis.disconnect();

    // From a log position (a delivery reports its event's): the earlier key too.
    const deliveries = await api(server).get(`/v1/workspaces/${ws}/webhooks/${endpointId}/deliveries`).set(u.auth);
    const oldest = deliveries.body.deliveries.at(-1);
    const byPos = await api(server).post(path).set(u.auth).send({ sincePosition: oldest.position });
    expect(byPos.status).toBe(202);
    await until(
      async () => (await api(server).get(`${path}/${byPos.body.replayId}`).set(u.auth)).body.succeeded === 3,
      20_000,
      'the positional replay',
    );
    expect(r.received).toHaveLength(8);
    const list = await api(server).get(path).set(u.auth);
    expect(list.body.replays.map((x: { replayId: string }) => x.replayId)).toEqual([byPos.body.replayId, replayId]);
  });

  test('bad replay requests get 422 naming the field and start nothing', async () => {
    const u = await newUser('replay-bad');
    const r = await receiver();
    const endpointId = await register(u, r, ['key.created']);
    const path = `/v1/workspaces/${u.personalWs}/webhooks/${endpointId}/replays`;
    const cases: Array<[object, string]> = [
      [{}, 'since'],
      [{ since: '2026-01-01T00:00:00Z', sincePosition: '1' }, 'since'],
      [{ since: 'yesterday' }, 'since'],
      [{ since: '2999-01-01T00:00:00Z' }, 'since'],
      [{ sincePosition: '-1' }, 'sincePosition'],
      [{ sincePosition: 5 }, 'sincePosition'],
      // Finding F-5: past the head of the log.
      [{ sincePosition: '9000000000000000000' }, 'sincePosition'],
    ];
    for (const [body, field] of cases) {
      const res = await api(server).post(path).set(u.auth).send(body);
      expect([body, res.status, res.body.detail?.[0]?.loc]).toEqual([body, 422, ['body', field]]);
    }
    expect((await api(server).get(path).set(u.auth)).body.replays).toEqual([]);
  });
});

describe('replay limits (finding F-4)', () => {
  test('one running replay per endpoint: another start is 409 naming it, the same ask answers it; free again once it finished', async () => {
    const u = await newUser('replay-running');
    const ws = u.personalWs;
    let hold = false;
    const r = await receiver(() => (hold ? null : 204));
    const endpointId = await register(u, r, ['key.created']);
    const t0 = new Date(Date.now() - 1000).toISOString();
    await createKey(u, 'to replay');
    await until(() => r.received.length === 1, 20_000, 'the live delivery');

    hold = true;
    const path = `/v1/workspaces/${ws}/webhooks/${endpointId}/replays`;
    const first = await api(server).post(path).set(u.auth).send({ since: t0 });
    expect(first.status).toBe(202);
    await until(() => r.received.length === 2, 20_000, 'the replayed delivery, held open');
    const head = await server.services.store.headPosition();
    const other = await api(server).post(path).set(u.auth).send({ sincePosition: '0' });
    expect([other.status, other.body.detail]).toEqual([
      409,
      expect.stringContaining(`Replay ${first.body.replayId} of this endpoint is still running`),
    ]);
    expect(await server.services.store.headPosition()).toBe(head);
    const same = await api(server).post(path).set(u.auth).send({ since: t0 });
    expect([same.status, same.body.replayId]).toEqual([200, first.body.replayId]);

    // The held request times out, its retry is answered: the replay finishes and the endpoint is free.
    hold = false;
    await until(
      async () => (await api(server).get(`${path}/${first.body.replayId}`).set(u.auth)).body.succeeded === 1,
      60_000,
      'the first replay to finish',
    );
    expect((await api(server).post(path).set(u.auth).send({ sincePosition: '0' })).status).toBe(202);
  });

  test('a workspace starts at most WEBHOOKS_MAX_REPLAYS_PER_DAY replays a UTC day: then 429 with Retry-After, nothing written', async () => {
    const u = await newUser('replay-cap');
    const ws = u.personalWs;
    const r = await receiver();
    const eps = [
      await register(u, r, ['deposit.failed']),
      await register(u, r, ['deposit.failed']),
      await register(u, r, ['deposit.failed']),
    ];
    const since = new Date(Date.now() - 1000).toISOString();
    for (const ep of eps.slice(0, 2))
      expect((await api(server).post(`/v1/workspaces/${ws}/webhooks/${ep}/replays`).set(u.auth).send({ since })).status).toBe(202);
    const head = await server.services.store.headPosition();
    const third = await api(server).post(`/v1/workspaces/${ws}/webhooks/${eps[2]}/replays`).set(u.auth).send({ since });
    expect(third.status).toBe(429);
    expect(third.body.detail).toMatch(
      /^This workspace started its 2 replays for today \(UTC\): the next one can start after \d{4}-\d\d-\d\dT00:00:00\.000Z$/,
    );
    const retryAfter = Number(third.headers['retry-after']);
    expect(retryAfter).toBeGreaterThan(0);
    expect(retryAfter).toBeLessThanOrEqual(86_400);
    expect(await server.services.store.headPosition()).toBe(head);
    expect((await api(server).get(`/v1/workspaces/${ws}/webhooks/${eps[2]}/replays`).set(u.auth)).body.replays).toEqual([]);
  });

  test("a replay reads only its workspace's streams, never the whole log", async () => {
    const u = await newUser('replay-reads');
    const ws = u.personalWs;
    const r = await receiver();
    const endpointId = await register(u, r, ['key.created', 'deposit.succeeded', 'balance.below_threshold', 'key.budget_80_percent']);
    const keyId = await createKey(u, 'budgeted');
    await api(server).patch(`/v1/workspaces/${ws}/keys/${keyId}`).set(u.auth).send({ budget: '5', budgetPeriod: 'daily' }).expect(200);
    const other = await newUser('replay-reads-other');
    await createKey(other, 'not mine');
    const started = await api(server).post(`/v1/workspaces/${ws}/webhooks/${endpointId}/replays`).set(u.auth).send({ sincePosition: '0' });
    expect(started.status).toBe(202);
    await until(
      async () =>
        (await api(server).get(`/v1/workspaces/${ws}/webhooks/${endpointId}/replays/${started.body.replayId}`).set(u.auth)).body.status ===
        'enqueued',
      20_000,
      'the scan',
    );

    // The same scan again, through a store that records what is read.
    const store = server.services.store;
    const read: string[] = [];
    const watched = {
      readAll: () => Promise.reject(new Error('readAll called')),
      readStream: (stream: string, opts?: object) => (read.push(stream), store.readStream(stream, opts)),
    } as unknown as typeof store;
    const queueRedis = await server.services.connectRedis('test-queue-reads', { maxRetriesPerRequest: null });
    const queue = webhookQueue({
      redis: queueRedis,
      prefix: bullPrefix(server.services.config, WEBHOOK_QUEUE),
      config: server.services.config,
    });
    try {
      await server.services.redis.hset(server.services.ks.shared('webhooks', 'replay', started.body.replayId), {
        status: 'scanning',
        scannedTo: '',
      });
      expect(
        await runReplay(
          { store: watched, redis: server.services.redis, ks: server.services.ks, queue },
          { data: { workspaceId: ws, endpointId, replayId: started.body.replayId } },
        ),
      ).toBe('enqueued');
    } finally {
      await queue.close();
      queueRedis.disconnect();
    }
    expect(read.length).toBeGreaterThan(0);
    const mine = (name: string) => name.endsWith(ws) || name.startsWith(`key-budget-${keyId}-`);
    expect(read.filter((name) => !mine(name))).toEqual([]);
    expect(read).toEqual(
      expect.arrayContaining([
        `webhooks-${ws}`,
        `workspace-${ws}`,
        `billing-${ws}`,
        `balance-alerts-${ws}`,
        expect.stringMatching(new RegExp(`^key-budget-${keyId}-\\d{4}-\\d\\d-\\d\\d-80$`)),
      ]),
    );
  });
});

describe('webhook administration in the audit log (finding I-2)', () => {
  test('registering, rotating, replaying and deleting an endpoint are audited, never with the secret', async () => {
    const u = await newUser('audit');
    const ws = u.personalWs;
    const r = await receiver();
    const created = await api(server)
      .post(`/v1/workspaces/${ws}/webhooks`)
      .set(u.auth)
      .send({ url: r.url, eventTypes: ['key.created'] });
    expect(created.status).toBe(201);
    const endpointId = created.body.endpointId as string;
    const rotated = await api(server).post(`/v1/workspaces/${ws}/webhooks/${endpointId}/rotate-secret`).set(u.auth);
    expect(rotated.status).toBe(200);
    const replay = await api(server).post(`/v1/workspaces/${ws}/webhooks/${endpointId}/replays`).set(u.auth).send({ sincePosition: '0' });
    expect(replay.status).toBe(202);
    await api(server).delete(`/v1/workspaces/${ws}/webhooks/${endpointId}`).set(u.auth).expect(204);
    await server.services.progress.waitFor(await server.services.store.headPosition(), 10_000);

    const log = await api(server).get(`/v1/workspaces/${ws}/audit`).set(u.auth);
    expect(log.status).toBe(200);
    const mine = (
      log.body.entries as Array<{
        action: string;
        actor: { type: string; userId?: string };
        target: { type: string; id: string } | null;
        details: object;
      }>
    ).filter((e) => e.action.startsWith('webhook.'));
    expect(mine.map((e) => e.action)).toEqual([
      'webhook.endpoint_deleted',
      'webhook.replay_requested',
      'webhook.secret_rotated',
      'webhook.endpoint_registered',
    ]);
    for (const e of mine) {
      expect(e.target).toEqual({ type: 'webhookEndpoint', id: endpointId });
      expect(e.actor).toMatchObject({ type: 'user', userId: u.userId });
    }
    expect(mine[3].details).toEqual({ url: r.url, eventTypes: ['key.created'] });
    expect(mine[1].details).toMatchObject({ replayId: replay.body.replayId, fromPosition: '0' });
    const csv = await api(server).get(`/v1/workspaces/${ws}/audit?format=csv`).set(u.auth);
    for (const text of [JSON.stringify(log.body), csv.text]) {
      expect(text).not.toContain(created.body.secret);
      expect(text).not.toContain(rotated.body.secret);
      expect(text).not.toContain('whsec_');
    }
  });
});
