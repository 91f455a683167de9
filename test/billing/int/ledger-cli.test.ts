import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { streams } from '../../../src/platform/streams';
import { startTestServer, TestServer } from '../../support/harness';
import { api, attach, deposit, newUser, TestUser } from '../e2e/helpers';
import { debit } from '../../support/debit';
import { BUNDLE_NODE_PATH, bundleChild } from '../../support/child-process';
import { grantCredit } from '../../../src/billing/usecases';
import { expireDueCredits } from '../../../src/billing/workers/credit-expiry/worker';
import { allEvents } from '../../../src/cli/ledger/all-events';

/** `tollgate ledger …` as finance runs it: the real CLI in its own process, over the service's store and Redis. */
let server: TestServer;
let u: TestUser;
/** The shipped CLI as bin/tollgate.js starts it, bundled once (test/support/child-process.ts): a start under tsx cost about 1.7 s of CPU. */
const CLI = join(__dirname, '..', '..', 'support', 'fixtures', 'shipped-cli.ts');
let cliArgs: string[];

function tollgate(...args: string[]) {
  const r = spawnSync(process.execPath, [...cliArgs, ...args], {
    env: {
      ...process.env,
      NODE_PATH: BUNDLE_NODE_PATH,
      REDIS_PREFIX: server.prefix,
      DATA_DIR: server.dataDir,
      REDIS_URL: server.services.config.REDIS_URL,
      LOG_LEVEL: 'silent',
    },
    encoding: 'utf8',
    timeout: 60_000,
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

beforeAll(async () => {
  cliArgs = bundleChild(CLI).args;
  server = await startTestServer();
  u = await newUser(server, 'finance');
  await attach(server, u, u.personalWs);
  await deposit(server, u, u.personalWs, '100');
  await debit(server.services, u.personalWs, { amountNanoUsd: 30_000n, inputTokens: 4, outputTokens: 2 }); // 0.00003 USD
  await deposit(server, u, u.personalWs, '10.25');
  const res = await api(server).get(`/v1/workspaces/${u.personalWs}/billing`).set(u.auth);
  expect(res.body.balance).toBe('110.24997');
});
afterAll(() => server?.close());

test('statement --month: the monthly statement the API serves, replayed from the store', async () => {
  const month = new Date().toISOString().slice(0, 7);
  const r = tollgate('ledger', 'statement', '--workspace', u.personalWs, '--month', month, '--json');
  expect(r.code).toBe(0);
  const s = JSON.parse(r.stdout);
  expect(s).toMatchObject({ month, opening: '0', deposits: '110.25', reloads: '0', debits: '0.00003', closing: '110.24997' });
  expect(s.credits.map((c: { amount: string }) => c.amount)).toEqual(['100', '10.25']);
  const viaApi = await api(server).get(`/v1/workspaces/${u.personalWs}/statements/${month}`).set(u.auth);
  expect(viaApi.body.closingBalance).toBe(s.closing);
  expect(viaApi.body.openingBalance).toBe(s.opening);
  expect(tollgate('ledger', 'statement', '--workspace', u.personalWs, '--month', '2026-13').stderr).toMatch(/not a month/);
});

test('statement: every money event with its running balance, replayed from the store', () => {
  const r = tollgate('ledger', 'statement', '--workspace', u.personalWs, '--json');
  expect(r.code).toBe(0);
  const s = JSON.parse(r.stdout);
  expect(s.lines.map((l: { type: string; amount: string; balance: string }) => [l.type, l.amount, l.balance])).toEqual([
    ['DepositSucceeded', '100', '100'],
    ['TokensDebited', '-0.00003', '99.99997'],
    ['DepositSucceeded', '10.25', '110.24997'],
  ]);
  expect(s.totals).toEqual({ deposited: '110.25', reloaded: '0', granted: '0', expired: '0', debited: '0.00003', balance: '110.24997' });
  // The debit was paid from the first deposit (a paid grant named by its deposit id).
  expect(s.lines[1].drawn).toEqual([{ grantId: s.lines[0].ref, amount: '0.00003', amountNanoUsd: '30000' }]);
  const text = tollgate('ledger', 'statement', '--workspace', u.personalWs);
  expect(text.stdout).toMatch(/closing balance 110\.24997/);
});

test('export --format csv: one row per money event, exact amounts', () => {
  const r = tollgate('ledger', 'export', '--format', 'csv', '--workspace', u.personalWs);
  expect(r.code).toBe(0);
  const rows = r.stdout.trim().split('\n');
  expect(rows[0]).toBe(
    'position,time,workspace_id,type,reference,amount_usd,balance_usd,amount_nano_usd,balance_nano_usd,payment_intent_id,key_id,model,input_tokens,output_tokens,drawn_from',
  );
  expect(rows).toHaveLength(4);
  const debitRow = rows[2].split(',');
  expect(debitRow.slice(3, 9)).toEqual(['TokensDebited', debitRow[4], '-0.00003', '99.99997', '-30000', '99999970000']);
  expect(debitRow.slice(10)).toEqual(['key-1', 'service_3_pi', '4', '2', `${rows[1].split(',')[4]}:30000`]);
  expect(tollgate('ledger', 'export', '--format', 'xml').code).toBe(1);
});

test('verify: 0 differences, and a non-zero exit when a projection drifts', async () => {
  const ok = tollgate('ledger', 'verify');
  expect(ok.code).toBe(0);
  expect(ok.stdout).toMatch(/: 0 differences/);
  const key = (await server.services.readModels.keys('balances')).ws(u.personalWs);
  await server.services.redis.hincrby(key, 'balance', -1);
  try {
    const bad = tollgate('ledger', 'verify');
    expect(bad.code).toBe(1);
    expect(bad.stdout).toMatch(/1 differences/);
    expect(bad.stdout).toMatch(/balances\.balance: replayed 110\.24997 USD, projected 110\.249969999 USD/);
  } finally {
    await server.services.redis.hincrby(key, 'balance', 1);
  }
});

test('reconcile: deposits against the gateway (sandbox); a credit the gateway never charged is a difference', async () => {
  const ok = tollgate('ledger', 'reconcile', '--json');
  expect(ok.code).toBe(0);
  const rep = JSON.parse(ok.stdout);
  expect(rep).toMatchObject({ gateway: 'sandbox', ledgerCredits: 2, gatewayCharges: 2, matched: 2, differences: [] });
  const ws = randomUUID();
  const r = await server.services.store.append(
    streams.billing(ws),
    [
      {
        id: randomUUID(),
        type: 'DepositSucceeded',
        data: { workspaceId: ws, depositId: 'd-forged', amountNanoUsd: '5000000000', paymentIntentId: 'pi_forged', by: 'x' },
      },
    ],
    { expectedRevision: 'no_stream' },
  );
  await server.services.progress.waitFor(r.position, 5000);
  const bad = tollgate('ledger', 'reconcile');
  expect(bad.code).toBe(1);
  expect(bad.stdout).toMatch(/missing_at_gateway: workspace .* entry d-forged payment pi_forged/);
});

test('statement: a mistyped workspace id exits non-zero with one line', () => {
  const r = tollgate('ledger', 'statement', '--workspace', randomUUID());
  expect(r.code).not.toBe(0);
  expect(r.stdout).toBe('');
  expect(r.stderr.trim().split('\n')).toHaveLength(1);
  expect(r.stderr).toMatch(/no workspace .* in the event store/);
});

test('verify stays at 0 differences over a history with promotional grants, a drawdown across them and an expiry', async () => {
  const s = server.services;
  const v = await newUser(server, 'granted');
  const ws = v.personalWs;
  await attach(server, v, ws);
  await deposit(server, v, ws, '100');
  const now = s.now();
  const soon = new Date(now.getTime() + 60_000).toISOString();
  await grantCredit(s, {
    workspaceId: ws,
    idempotencyKey: 'a',
    amount: 500_000_000n,
    priority: 10,
    expiresAt: soon,
    note: 'trial',
    metadata: {},
  });
  await grantCredit(s, {
    workspaceId: ws,
    idempotencyKey: 'b',
    amount: 200_000_000n,
    priority: 60,
    expiresAt: null,
    note: 'apology',
    metadata: {},
  });
  await debit(s, ws, { amountNanoUsd: 300_000_000n });
  const realNow = s.now;
  try {
    s.now = () => new Date(Date.parse(soon) + 1);
    expect(await expireDueCredits(s)).toBe(1);
  } finally {
    s.now = realNow;
  }
  await debit(s, ws, { amountNanoUsd: 400_000_000n });
  const st = JSON.parse(tollgate('ledger', 'statement', '--workspace', ws, '--json').stdout);
  expect(st.lines.map((l: { type: string; amountNanoUsd: string }) => [l.type, l.amountNanoUsd])).toEqual([
    ['DepositSucceeded', '100000000000'],
    ['CreditGranted', '500000000'],
    ['CreditGranted', '200000000'],
    ['TokensDebited', '-300000000'],
    ['CreditExpired', '-200000000'],
    ['TokensDebited', '-400000000'],
  ]);
  // The promotion (priority 10) first; after its expiry, the deposit (50) before the apology (60).
  expect(st.lines[5].drawn.map((d: { amountNanoUsd: string }) => d.amountNanoUsd)).toEqual(['400000000']);
  expect(st.lines[5].drawn[0].grantId).toBe(st.lines[0].ref);
  expect(st.totals).toMatchObject({ granted: '0.7', expired: '0.2', debited: '0.7', balance: '99.8' });
  const ok = tollgate('ledger', 'verify', '--json');
  expect(ok.code).toBe(0);
  expect(JSON.parse(ok.stdout).differences).toEqual([]);
  // A drifted grant in the balances book is a difference of its own.
  const key = (await s.readModels.keys('balances')).ws(ws);
  const grantB = st.lines[2].ref as string;
  await s.redis.hincrby(key, `g:${grantB}`, -1);
  try {
    const bad = tollgate('ledger', 'verify', '--json');
    expect(bad.code).toBe(1);
    expect(JSON.parse(bad.stdout).differences).toEqual([
      { workspaceId: ws, projection: 'balances', field: `grant ${grantB}`, replayed: '200000000', projected: '199999999' },
    ]);
  } finally {
    await s.redis.hincrby(key, `g:${grantB}`, 1);
  }
});

test('progress: verify, statement, export and reconcile draw the rebuild bar on a terminal (stderr), nothing on a pipe', async () => {
  const written: string[] = [];
  const tty = { isTTY: true, columns: 120, write: (c: string) => (written.push(c), true) };
  let n = 0;
  for await (const e of allEvents(server.services.store, { progress: 'verify', progressStream: tty })) if (e) n++;
  expect(n).toBeGreaterThan(0);
  expect(written.join('')).toMatch(/verify \[[^\]]*\] 100% \| (\d+)\/\1 positions/);
  // Spawned with pipes, as a script or a cron job runs them: stderr stays empty.
  for (const args of [['verify'], ['statement', '--workspace', u.personalWs], ['export', '--format', 'csv'], ['reconcile']]) {
    const r = tollgate('ledger', ...args);
    expect({ args, stderr: r.stderr }).toEqual({ args, stderr: '' });
  }
});
