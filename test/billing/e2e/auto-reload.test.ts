import { randomUUID } from 'node:crypto';
import { streams } from '../../../src/platform/streams';
import { usd } from '../../../src/platform/money';
import type { Queue } from 'bullmq';
import { ReloadJobData, reloadQueue, RELOAD_QUEUE } from '../../../src/billing/workers/auto-reload';
import { bullPrefix } from '../../../src/platform/bullmq';
import { startTestServer, TestServer } from '../../support/harness';
import { api, attach, billing, fundedUser, newUser, TestUser } from './helpers';
import { debit } from '../../support/debit';
import { eventually, until } from '../../support/wait';
import { expectMatchesContract } from '../../support/contract';
import { ledger as ledgerRoute } from '../../../src/billing/routes/billing-schemas';

let server: TestServer;
let jobs: Queue<ReloadJobData>;
beforeAll(async () => {
  server = await startTestServer();
  jobs = reloadQueue({
    redis: await server.services.connectRedis('auto-reload-test'),
    prefix: bullPrefix(server.services.config, RELOAD_QUEUE),
  });
});
afterAll(async () => {
  await jobs?.close();
  await server?.close();
});

/**
 * Quiet: the auto-reload reactor has seen every event in the store and no reload job of `ws` waits,
 * is delayed or runs. What a test that says "no (second) reload" must wait for before it looks:
 * a fixed sleep can end before the reactor saw the debit on a loaded machine, and then it proves nothing.
 */
async function quiet(ws: string): Promise<void> {
  const s = server.services;
  await until(
    async () => {
      const head = await s.store.headPosition();
      const seen = BigInt((await s.redis.get(s.ks.reactorCheckpoint('auto-reload'))) ?? '0');
      if (seen < head) return false;
      const pending = await jobs.getJobs(['waiting', 'delayed', 'active', 'prioritized']);
      return !pending.some((j) => j?.data.workspaceId === ws) && (await s.store.headPosition()) === head;
    },
    20_000,
    'the auto-reload reactor and worker to go quiet',
  );
}

const putAutoReload = (u: TestUser, ws: string, body: Record<string, unknown>) =>
  api(server).put(`/v1/workspaces/${ws}/billing/auto-reload`).set(u.auth).send(body);

/** A debit as the inference path writes it (appended straight to the store). */
const billingTypes = async (ws: string) => (await server.services.store.readStream(streams.billing(ws))).map((e) => e.type);

describe('auto-reload (sandbox gateway, worker in-process)', () => {
  test('validation: amount of at least 10 USD, threshold of at least 0, monthlyCap optional; needs a card to enable', async () => {
    const u = await newUser(server);
    const ws = u.personalWs;
    const noCard = await putAutoReload(u, ws, { enabled: true, threshold: '5', amount: '10' });
    expect(noCard.status).toBe(409);
    await attach(server, u, ws);
    const bad = await putAutoReload(u, ws, { enabled: 'yes', threshold: '-1', amount: '9.99', monthlyCap: 5 });
    expect(bad.status).toBe(422);
    expect(bad.body.detail.map((d: { loc: string[] }) => d.loc.join('.'))).toEqual([
      'body.enabled',
      'body.threshold',
      'body.amount',
      'body.monthlyCap',
    ]);
    const ok = await putAutoReload(u, ws, { enabled: true, threshold: '5', amount: '10' });
    expect(ok.status).toBe(200);
    // No cap given: auto-reload never runs unbounded, the cap defaults to five reloads a month.
    expect(ok.body).toMatchObject({ enabled: true, threshold: '5', amount: '10', monthlyCap: '50', status: 'active' });
    const nullCap = await putAutoReload(u, ws, { enabled: true, threshold: '5', amount: '10', monthlyCap: null });
    expect(nullCap.body.monthlyCap).toBe('50');
    const head = await server.services.store.headPosition();
    const capTooSmall = await putAutoReload(u, ws, { enabled: true, threshold: '5', amount: '20', monthlyCap: '10' });
    expect(capTooSmall.status).toBe(422);
    expect(capTooSmall.body.detail).toEqual([
      { loc: ['body', 'monthlyCap'], msg: 'monthlyCap must be at least the reload amount', type: 'value_error' },
    ]);
    // The finding: a threshold no reload can reach charged the card on every request.
    const absurd = await putAutoReload(u, ws, {
      enabled: true,
      threshold: '999999999999999.999999999',
      amount: '999999.99',
      monthlyCap: null,
    });
    expect(absurd.status).toBe(422);
    expect(absurd.body.detail[0].loc).toEqual(['body', 'threshold']);
    expect(absurd.body.detail[0].msg).toMatch(/threshold must be at most the reload amount \(999999.99 USD\)/);
    const tooBig = await putAutoReload(u, ws, { enabled: true, threshold: '5', amount: '1000000' });
    expect(tooBig.status).toBe(422);
    expect(tooBig.body.detail).toEqual([{ loc: ['body', 'amount'], msg: 'amount must be at most 999999.99 USD', type: 'value_error' }]);
    expect(await server.services.store.headPosition()).toBe(head);
  });

  test('settings saved before the threshold rule (threshold far above the amount): ten small debits charge the card once', async () => {
    const u = await fundedUser(server);
    const ws = u.personalWs;
    const events = await server.services.store.readStream(streams.billing(ws));
    const legacy = await server.services.store.append(
      streams.billing(ws),
      [
        {
          id: randomUUID(),
          type: 'AutoReloadConfigured',
          data: {
            workspaceId: ws,
            enabled: true,
            thresholdNanoUsd: usd(999_999_999).toString(),
            amountNanoUsd: usd(20).toString(),
            monthlyCapNanoUsd: null,
            by: 'legacy',
          },
        },
      ],
      { expectedRevision: events[events.length - 1].revision },
    );
    await server.services.progress.waitFor(legacy.position, 5000);
    await debit(server.services, ws, { amountNanoUsd: usd(85) }); // 100 → 15: one reload → 35
    await eventually(
      () => billing(server, u, ws),
      (r) => r.body.reloaded === '20' && r.body.autoReload.status === 'active',
    );
    for (let i = 0; i < 10; i++) await debit(server.services, ws, { amountNanoUsd: 400_000n }); // 0.0004 USD each
    await quiet(ws);
    expect((await billingTypes(ws)).filter((t) => t === 'AutoReloadTriggered')).toHaveLength(1);
  });

  test('a debit below the threshold reloads once; the ledger shows every money event with its running balance', async () => {
    const u = await fundedUser(server);
    const ws = u.personalWs;
    expect((await putAutoReload(u, ws, { enabled: true, threshold: '50', amount: '50', monthlyCap: '200' })).status).toBe(200);
    await debit(server.services, ws, { amountNanoUsd: usd(60) }); // 100 → 40
    const after = await eventually(
      () => billing(server, u, ws),
      (r) => r.body.balance === '90',
    );
    expect(after.body).toMatchObject({ balance: '90', reloaded: '50', spent: '60' });
    expect(after.body.autoReload).toMatchObject({ status: 'active', reloadedThisMonth: '50' });
    // The job completed on its first attempt: nothing waits for a retry.
    const counts = await (await server.services.reloadQueue()).getJobCounts('delayed', 'failed', 'waiting', 'active');
    expect(counts).toMatchObject({ delayed: 0, failed: 0, waiting: 0, active: 0 });
    expect(await billingTypes(ws)).toEqual([
      'PaymentMethodAttached',
      'DepositRequested',
      'DepositSucceeded',
      'AutoReloadConfigured',
      'AutoReloadTriggered',
      'AutoReloadSucceeded',
    ]);
    const ledger = await api(server).get(`/v1/workspaces/${ws}/billing/ledger`).set(u.auth);
    expect(ledger.status).toBe(200);
    await expectMatchesContract(ledger, ledgerRoute);
    expect(ledger.body.entries.map((e: { type: string; amount: string; balance: string }) => [e.type, e.amount, e.balance])).toEqual([
      ['DepositSucceeded', '100', '100'],
      ['TokensDebited', '-60', '40'],
      ['AutoReloadSucceeded', '50', '90'],
    ]);
    const page = await api(server).get(`/v1/workspaces/${ws}/billing/ledger?limit=2`).set(u.auth);
    expect(page.body.entries).toHaveLength(2);
    expect(page.body.nextCursor).toBe('2');
    const rest = await api(server).get(`/v1/workspaces/${ws}/billing/ledger?limit=2&cursor=2`).set(u.auth);
    expect(rest.body.entries.map((e: { type: string }) => e.type)).toEqual(['AutoReloadSucceeded']);
    expect(rest.body.nextCursor).toBeNull();

    // The monthly cap: 50 reloaded + 50 more would be 100 ≤ 200; then 150, 200, and no more.
    for (let i = 0; i < 3; i++) {
      const before = (await billing(server, u, ws)).body.reloaded;
      await debit(server.services, ws, { amountNanoUsd: usd(50) });
      await eventually(
        () => billing(server, u, ws),
        (r) => r.body.reloaded !== before && r.body.autoReload.status !== 'reloading',
      );
    }
    // The fourth would pass the cap: it must not reload (a 1.5 s wait for a reload that must not come
    // could also end before the third reload had landed, on a loaded machine).
    await debit(server.services, ws, { amountNanoUsd: usd(50) });
    await quiet(ws);
    const capped = await billing(server, u, ws);
    expect(capped.body.autoReload.reloadedThisMonth).toBe('200');
    expect(capped.body.reloaded).toBe('200');
  });

  test('a declined reload suspends auto-reload and leaves a notice for the admins in GET /v1/me; a new card re-enables', async () => {
    const u = await fundedUser(server);
    const ws = u.personalWs;
    await putAutoReload(u, ws, { enabled: true, threshold: '50', amount: '50' });
    await attach(server, u, ws, 'pm_card_chargeDeclined');
    await debit(server.services, ws, { amountNanoUsd: usd(70) });
    const suspended = await eventually(
      () => billing(server, u, ws),
      (r) => r.body.autoReload?.status === 'suspended',
    );
    expect(suspended.body.autoReload.suspendedReason).toMatch(/declined/);
    expect(suspended.body.balance).toBe('30');
    expect((await billingTypes(ws)).slice(-3)).toEqual(['AutoReloadTriggered', 'AutoReloadFailed', 'AutoReloadSuspended']);
    const me = await api(server).get('/v1/me').set(u.auth);
    expect(me.body.notices).toEqual([
      expect.objectContaining({
        kind: 'auto_reload_suspended',
        workspaceId: ws,
        message: expect.stringMatching(/Auto-reload is suspended/),
      }),
    ]);

    // More debits do not retry the card: no retry storm.
    await debit(server.services, ws, { amountNanoUsd: usd(1) });
    await quiet(ws);
    expect((await billingTypes(ws)).filter((t) => t === 'AutoReloadTriggered')).toHaveLength(1);

    // A new card lifts the suspension, and the balance (29 < 50) is reloaded.
    await attach(server, u, ws, 'pm_card_visa');
    const resumed = await eventually(
      () => billing(server, u, ws),
      (r) => r.body.balance === '79',
    );
    expect(resumed.body.autoReload.status).toBe('active');
    expect((await api(server).get('/v1/me').set(u.auth)).body.notices).toEqual([]);
  });

  test('authentication required off-session suspends too; saving the settings again re-enables', async () => {
    const u = await fundedUser(server);
    const ws = u.personalWs;
    await attach(server, u, ws, 'pm_card_authenticationRequired');
    await putAutoReload(u, ws, { enabled: true, threshold: '50', amount: '50' });
    await debit(server.services, ws, { amountNanoUsd: usd(60) });
    const s = await eventually(
      () => billing(server, u, ws),
      (r) => r.body.autoReload?.status === 'suspended',
    );
    expect(s.body.autoReload.suspendedReason).toMatch(/authentication/);
    const events = await server.services.store.readStream(streams.billing(ws));
    expect(events.find((e) => e.type === 'AutoReloadFailed')!.data).toMatchObject({ code: 'authentication_required' });
    const again = await putAutoReload(u, ws, { enabled: false, threshold: '50', amount: '50' });
    expect(again.body.status).toBe('disabled');
    expect((await api(server).get('/v1/me').set(u.auth)).body.notices).toEqual([]);
  });

  test('a rebuild of every billing read model replays the ledger and charges nothing', async () => {
    const u = await fundedUser(server);
    const ws = u.personalWs;
    await putAutoReload(u, ws, { enabled: true, threshold: '50', amount: '50' });
    await debit(server.services, ws, { amountNanoUsd: usd(70) });
    await eventually(
      () => billing(server, u, ws),
      (r) => r.body.balance === '80',
    );
    const before = (await billing(server, u, ws)).body;
    const head = await server.services.store.headPosition();
    const { rebuildProjection } = await import('../../../src/platform/projections/rebuild');
    const { projectionsOf } = await import('../../../src/main');
    const s = server.services;
    for (const p of projectionsOf(s).filter((x) =>
      ['balances', 'ledger', 'usage', 'billing-settings', 'billing-notices'].includes(x.name),
    )) {
      await rebuildProjection({ store: s.store, redis: s.redis, ks: s.ks, projection: p });
    }
    await quiet(ws);
    const appended0 = await s.store.readAll({ fromPosition: head + 1n });
    const appended = appended0.filter((e) => e.stream === streams.billing(ws));
    expect(appended.map((e) => e.type)).toEqual([]); // nothing appended: no reload was triggered
    const after = (await billing(server, u, ws)).body;
    expect(after).toEqual(before);
    const ledger = await api(server).get(`/v1/workspaces/${ws}/billing/ledger`).set(u.auth);
    expect(ledger.body.entries.map((e: { balance: string }) => e.balance)).toEqual(['100', '30', '80']);
  });

  test('members read billing; only admins change it', async () => {
    const admin = await fundedUser(server, 'owner');
    const member = await newUser(server, 'member');
    const { addMember, createWorkspace } = await import('../../accounts/e2e/helpers');
    const ws = await createWorkspace(server, admin, 'Shared');
    await addMember(server, admin, ws, member);
    expect((await billing(server, member, ws)).status).toBe(200);
    expect((await api(server).get(`/v1/workspaces/${ws}/billing/ledger`).set(member.auth)).status).toBe(200);
    const forbidden = await attach(server, member, ws);
    expect(forbidden.status).toBe(403);
    expect(forbidden.body).toEqual({ detail: 'Forbidden' });
    expect((await putAutoReload(member, ws, { enabled: false, threshold: '1', amount: '10' })).status).toBe(403);
    const stranger = await newUser(server, 'stranger');
    expect((await billing(server, stranger, ws)).status).toBe(404);
  });
});
