import { randomUUID } from 'node:crypto';
import { streams } from '../../../src/domain/streams';
import { usd } from '../../../src/domain/money';
import { startTestServer, TestServer } from '../../support/harness';
import { api, attach, billing, fundedUser, newUser, TestUser } from './helpers';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server?.close());

const putAutoReload = (u: TestUser, ws: string, body: Record<string, unknown>) =>
  api(server).put(`/v1/workspaces/${ws}/billing/auto-reload`).set(u.auth).send(body);

/** A debit as the inference path writes it (appended straight to the store). */
async function debit(ws: string, amountNano: bigint) {
  const requestId = randomUUID();
  const r = await server.services.store.append(
    streams.inference(requestId),
    [
      {
        id: randomUUID(),
        type: 'TokensDebited',
        data: {
          requestId,
          workspaceId: ws,
          keyId: 'key-1',
          config: 'service_3_pi',
          inputTokens: 1,
          outputTokens: 1,
          inputPriceNanoUsd: '2500',
          outputPriceNanoUsd: '10000',
          amountNanoUsd: amountNano.toString(),
        },
      },
    ],
    { expectedRevision: 'no_stream' },
  );
  await server.services.progress.waitFor(r.position, 5000);
}

async function eventually<T>(fn: () => Promise<T>, ok: (v: T) => boolean, ms = 10_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (ok(v) || Date.now() > end) return v;
    await new Promise((r) => setTimeout(r, 50));
  }
}

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
    expect(bad.body.detail.map((d: { loc: string[] }) => d.loc.join('.'))).toEqual(['body.enabled', 'body.threshold', 'body.amount', 'body.monthlyCap']);
    const ok = await putAutoReload(u, ws, { enabled: true, threshold: '5', amount: '10' });
    expect(ok.status).toBe(200);
    expect(ok.body).toMatchObject({ enabled: true, threshold: '5', amount: '10', monthlyCap: null, status: 'active' });
    const capTooSmall = await putAutoReload(u, ws, { enabled: true, threshold: '5', amount: '20', monthlyCap: '10' });
    expect(capTooSmall.status).toBe(400);
  });

  test('a debit below the threshold reloads once; the ledger shows every money event with its running balance', async () => {
    const u = await fundedUser(server);
    const ws = u.personalWs;
    expect((await putAutoReload(u, ws, { enabled: true, threshold: '50', amount: '25', monthlyCap: '100' })).status).toBe(200);
    await debit(ws, usd(60)); // 100 → 40
    const after = await eventually(
      () => billing(server, u, ws),
      (r) => r.body.balance === '65',
    );
    expect(after.body).toMatchObject({ balance: '65', reloaded: '25', spent: '60' });
    expect(after.body.autoReload).toMatchObject({ status: 'active', reloadedThisMonth: '25' });
    // The job completed on its first attempt: nothing waits for a retry.
    const { reloadQueueOf } = await import('../../../src/api/billing/service');
    const counts = await (await reloadQueueOf(server.services)).getJobCounts('delayed', 'failed', 'waiting', 'active');
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
    expect(ledger.body.entries.map((e: { type: string; amount: string; balance: string }) => [e.type, e.amount, e.balance])).toEqual([
      ['DepositSucceeded', '100', '100'],
      ['TokensDebited', '-60', '40'],
      ['AutoReloadSucceeded', '25', '65'],
    ]);
    const page = await api(server).get(`/v1/workspaces/${ws}/billing/ledger?limit=2`).set(u.auth);
    expect(page.body.entries).toHaveLength(2);
    expect(page.body.nextCursor).toBe('2');
    const rest = await api(server).get(`/v1/workspaces/${ws}/billing/ledger?limit=2&cursor=2`).set(u.auth);
    expect(rest.body.entries.map((e: { type: string }) => e.type)).toEqual(['AutoReloadSucceeded']);
    expect(rest.body.nextCursor).toBeNull();

    // The monthly cap: 25 reloaded + 25 more would be 50 ≤ 100; then 75, 100, and no more.
    for (let i = 0; i < 4; i++) {
      const before = (await billing(server, u, ws)).body.reloaded;
      await debit(ws, usd(30));
      await eventually(
        () => billing(server, u, ws),
        (r) => r.body.reloaded !== before && r.body.autoReload.status !== 'reloading',
        1500,
      );
    }
    const capped = await billing(server, u, ws);
    expect(capped.body.autoReload.reloadedThisMonth).toBe('100');
    expect(capped.body.reloaded).toBe('100');
  });

  test('a declined reload suspends auto-reload and leaves a notice for the admins in GET /v1/me; a new card re-enables', async () => {
    const u = await fundedUser(server);
    const ws = u.personalWs;
    await putAutoReload(u, ws, { enabled: true, threshold: '50', amount: '20' });
    await attach(server, u, ws, 'pm_card_chargeDeclined');
    await debit(ws, usd(70));
    const suspended = await eventually(
      () => billing(server, u, ws),
      (r) => r.body.autoReload?.status === 'suspended',
    );
    expect(suspended.body.autoReload.suspendedReason).toMatch(/declined/);
    expect(suspended.body.balance).toBe('30');
    expect((await billingTypes(ws)).slice(-3)).toEqual(['AutoReloadTriggered', 'AutoReloadFailed', 'AutoReloadSuspended']);
    const me = await api(server).get('/v1/me').set(u.auth);
    expect(me.body.notices).toEqual([
      expect.objectContaining({ kind: 'auto_reload_suspended', workspaceId: ws, message: expect.stringMatching(/Auto-reload is suspended/) }),
    ]);

    // More debits do not retry the card: no retry storm.
    await debit(ws, usd(1));
    await new Promise((r) => setTimeout(r, 300));
    expect((await billingTypes(ws)).filter((t) => t === 'AutoReloadTriggered')).toHaveLength(1);

    // A new card lifts the suspension, and the balance (29 < 50) is reloaded.
    await attach(server, u, ws, 'pm_card_visa');
    const resumed = await eventually(
      () => billing(server, u, ws),
      (r) => r.body.balance === '49',
    );
    expect(resumed.body.autoReload.status).toBe('active');
    expect((await api(server).get('/v1/me').set(u.auth)).body.notices).toEqual([]);
  });

  test('authentication required off-session suspends too; saving the settings again re-enables', async () => {
    const u = await fundedUser(server);
    const ws = u.personalWs;
    await attach(server, u, ws, 'pm_card_authenticationRequired');
    await putAutoReload(u, ws, { enabled: true, threshold: '50', amount: '20' });
    await debit(ws, usd(60));
    const s = await eventually(
      () => billing(server, u, ws),
      (r) => r.body.autoReload?.status === 'suspended',
    );
    expect(s.body.autoReload.suspendedReason).toMatch(/authentication/);
    const events = await server.services.store.readStream(streams.billing(ws));
    expect(events.find((e) => e.type === 'AutoReloadFailed')!.data).toMatchObject({ code: 'authentication_required' });
    const again = await putAutoReload(u, ws, { enabled: false, threshold: '50', amount: '20' });
    expect(again.body.status).toBe('disabled');
    expect((await api(server).get('/v1/me').set(u.auth)).body.notices).toEqual([]);
  });

  test('a rebuild of every billing read model replays the ledger and charges nothing', async () => {
    const u = await fundedUser(server);
    const ws = u.personalWs;
    await putAutoReload(u, ws, { enabled: true, threshold: '50', amount: '20' });
    await debit(ws, usd(70));
    await eventually(() => billing(server, u, ws), (r) => r.body.balance === '50');
    const before = (await billing(server, u, ws)).body;
    const head = await server.services.store.headPosition();
    const { rebuildProjection } = await import('../../../src/projections/rebuild');
    const { projectionsOf } = await import('../../../src/main');
    const s = server.services;
    for (const p of projectionsOf(s).filter((x) => ['balances', 'ledger', 'usage', 'billing-settings', 'billing-notices'].includes(x.name))) {
      await rebuildProjection({ store: s.store, redis: s.redis, ks: s.ks, projection: p });
    }
    await new Promise((r) => setTimeout(r, 500));
    const appended0 = await s.store.readAll({ fromPosition: head + 1n });
    const appended = appended0.filter((e) => e.stream === streams.billing(ws));
    expect(appended.map((e) => e.type)).toEqual([]); // nothing appended: no reload was triggered
    const after = (await billing(server, u, ws)).body;
    expect(after).toEqual(before);
    const ledger = await api(server).get(`/v1/workspaces/${ws}/billing/ledger`).set(u.auth);
    expect(ledger.body.entries.map((e: { balance: string }) => e.balance)).toEqual(['100', '30', '50']);
  });

  test('members read billing; only admins change it', async () => {
    const admin = await fundedUser(server, 'owner');
    const member = await newUser(server, 'member');
    const { addMember, createWorkspace } = await import('../accounts/helpers');
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
