import { reservationKeys } from '../../../src/billing';
import { randomUUID } from 'node:crypto';
import { periodIdsAt, periodWindow } from '../../../src/platform/budget-periods';
import { tokenCost } from '../../../src/inference/metering';
import { formatUsd, parseUsd } from '../../../src/platform/money';
import { balancesProjection } from '../../../src/billing/projections/balances/projection';
import { Reservations } from '../../../src/billing/projections/balances/reservations';
import { rebuildProjection } from '../../../src/platform/projections/rebuild';
import { renderPrompt } from '../../../src/inference/prompt';
import { countTokens } from '../../../src/inference/tokenizer';
import { startTestServer, TestServer } from '../../support/harness';
import { addMember, api, createWorkspace, fund, newUser, TestUser } from './helpers';

let server: TestServer;
let ann: TestUser; // admin
let bob: TestUser; // member
let eve: TestUser; // outsider with her own funded workspace
let team: string;
let elsewhere: string;

beforeAll(async () => {
  server = await startTestServer();
  [ann, bob, eve] = await Promise.all([newUser(server, 'ann'), newUser(server, 'bob'), newUser(server, 'eve')]);
  team = await createWorkspace(server, ann, 'Budgets');
  await addMember(server, ann, team, bob);
  await fund(server, team, { depositUsd: 1000 });
  elsewhere = await createWorkspace(server, eve, 'Eve Inc');
  await fund(server, elsewhere);
});
afterAll(() => server?.close());

const head = () => server.services.store.headPosition();
const newKey = async (by: TestUser, ws: string, name = 'budgeted key') => {
  const res = await api(server).post(`/v1/workspaces/${ws}/keys`).set(by.auth).send({ name });
  expect(res.status).toBe(201);
  return res.body as { keyId: string; secret: string; name: string };
};
const patch = (by: TestUser, ws: string, keyId: string, body: unknown) =>
  api(server)
    .patch(`/v1/workspaces/${ws}/keys/${keyId}`)
    .set(by.auth)
    .send(body as object);
const listed = async (ws: string, keyId: string) =>
  ((await api(server).get(`/v1/workspaces/${ws}/keys`).set(ann.auth)).body.keys as Record<string, unknown>[]).find(
    (k) => k.keyId === keyId,
  );

const context = [{ type: 'Human' as const, text: 'Write me a short, friendly greeting.' }];
const MAX_TOKENS = 40;
const infer = (secret: string) =>
  fetch(`${server.url}/external/api/inference`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${secret}`, 'Content-Type': 'application/json' },
    body: JSON.stringify({ context, config: 'service_3_pi', max_tokens: MAX_TOKENS }),
  }).then(async (r) => ({ status: r.status, body: (await r.json()) as { detail?: string; text?: string } }));

describe('PATCH /v1/workspaces/:ws/keys/:keyId', () => {
  test('a member renames a key and sets, changes and removes its budget; the key list shows each at once', async () => {
    const key = await newKey(ann, team, 'first name');
    const res = await patch(bob, team, key.keyId, { name: '  second name ', monthlyBudget: '12.50' });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      keyId: key.keyId,
      name: 'second name',
      prefix: key.secret.slice(0, 8),
      last4: key.secret.slice(-4),
      scopes: ['inference'],
      created: expect.any(String),
      createdBy: { userId: ann.userId, name: ann.name },
      expiresAt: null,
      expired: false,
      lastUsed: null,
      lastRoll: null,
      budget: '12.5',
      budgetPeriod: 'monthly',
      budgetPeriodId: new Date().toISOString().slice(0, 7),
      budgetSpent: '0',
      budgetResetsAt: periodWindow('monthly', new Date()).resetsAt.toISOString(),
      monthlyBudget: '12.5',
      spendMonth: new Date().toISOString().slice(0, 7),
      monthToDateSpend: '0',
      budgetRemaining: '12.5',
    });
    expect(await listed(team, key.keyId)).toEqual(res.body);
    // A request in flight holds part of the budget: what remains for the next one shrinks until it ends.
    const resv = new Reservations(server.services.redis, server.services.ks);
    const inFlight = randomUUID();
    expect(
      (await resv.reserve(team, inFlight, parseUsd('2.5'), Date.now(), { keyId: key.keyId, periods: periodIdsAt(new Date()) })).ok,
    ).toBe(true);
    expect(await listed(team, key.keyId)).toMatchObject({ budgetRemaining: '10', monthToDateSpend: '0' });
    await resv.release(team, inFlight);
    expect(await listed(team, key.keyId)).toMatchObject({ budgetRemaining: '12.5' });
    expect((await patch(ann, team, key.keyId, { monthlyBudget: '0' })).body).toMatchObject({
      monthlyBudget: '0',
      budgetRemaining: '0',
      name: 'second name',
    });
    const removed = await patch(ann, team, key.keyId, { monthlyBudget: null });
    expect(removed.body).toMatchObject({ monthlyBudget: null, budgetRemaining: null });
    // Nothing changed: 200, nothing appended.
    const before = await head();
    expect((await patch(ann, team, key.keyId, { name: 'second name', monthlyBudget: null })).status).toBe(200);
    expect(await head()).toBe(before);
  });

  test('malformed bodies: 422 FastAPI-style naming the field; nothing appended', async () => {
    const key = await newKey(ann, team);
    const before = await head();
    const cases: [unknown, (string | number)[]][] = [
      [{}, ['body']],
      [{ monthlyBudget: 'abc' }, ['body', 'monthlyBudget']],
      [{ monthlyBudget: '-1' }, ['body', 'monthlyBudget']],
      [{ monthlyBudget: '1e3' }, ['body', 'monthlyBudget']],
      [{ monthlyBudget: '0.0000000001' }, ['body', 'monthlyBudget']],
      [{ monthlyBudget: 5 }, ['body', 'monthlyBudget']],
      [{ monthlyBudget: '1000000000.01' }, ['body', 'monthlyBudget']],
      [{ name: 'ab' }, ['body', 'name']],
      [{ name: 'x'.repeat(65) }, ['body', 'name']],
      [{ name: 7 }, ['body', 'name']],
      [{ name: 'key\u0000name' }, ['body', 'name']],
      [{ name: 'esc\u001b[31m' }, ['body', 'name']],
    ];
    for (const [body, loc] of cases) {
      const res = await patch(ann, team, key.keyId, body);
      expect({ body, status: res.status }).toEqual({ body, status: 422 });
      expect(res.body.detail).toEqual(
        expect.arrayContaining([expect.objectContaining({ loc, msg: expect.any(String), type: expect.any(String) })]),
      );
    }
    const notJson = await api(server)
      .patch(`/v1/workspaces/${team}/keys/${key.keyId}`)
      .set(ann.auth)
      .set('Content-Type', 'application/json')
      .send('{"name":');
    expect(notJson.status).toBe(422);
    expect(await head()).toBe(before);
  });

  test("another workspace's key, a deleted or unknown key, an outsider, no session: 404/401; nothing appended", async () => {
    const mine = await newKey(ann, team);
    const theirs = await newKey(eve, elsewhere, 'eve key');
    const gone = await newKey(ann, team, 'deleted key');
    await api(server).delete(`/v1/workspaces/${team}/keys/${gone.keyId}`).set(ann.auth).expect(204);
    const before = await head();
    expect((await patch(ann, team, theirs.keyId, { monthlyBudget: '1' })).body).toEqual({ detail: 'API key not found' });
    expect((await patch(ann, team, gone.keyId, { monthlyBudget: '1' })).status).toBe(404);
    expect((await patch(ann, team, randomUUID(), { name: 'whatever' })).status).toBe(404);
    expect((await patch(eve, team, mine.keyId, { monthlyBudget: '1' })).body).toEqual({ detail: 'Workspace not found' });
    expect((await api(server).patch(`/v1/workspaces/${team}/keys/${mine.keyId}`).send({ monthlyBudget: '1' })).status).toBe(401);
    expect(await head()).toBe(before);
    expect((await listed(team, mine.keyId))?.monthlyBudget).toBeNull();
  });
});

describe('a key budget at the inference endpoints', () => {
  test('a budget of 0 refuses at once with 402 naming the budget and what is left; removing it lets the next request through', async () => {
    const key = await newKey(ann, team, 'frozen key');
    await patch(ann, team, key.keyId, { monthlyBudget: '0' }).expect(200);
    const before = await head();
    const refused = await infer(key.secret);
    expect(refused.status).toBe(402);
    expect(refused.body.detail).toMatch(
      /^Monthly budget exceeded: key "frozen key" has a monthly budget of 0 USD with 0 USD left this month \(UTC\); this request needs up to [\d.]+ USD\./,
    );
    // The streaming and OpenAI-compatible endpoints refuse the same way, before any byte of a stream.
    const streaming = await fetch(`${server.url}/external/api/inference/streaming`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${key.secret}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ context, config: 'service_3_pi', max_tokens: MAX_TOKENS }),
    });
    expect(streaming.status).toBe(402);
    expect(JSON.stringify(await streaming.json())).toContain('Monthly budget exceeded');
    const openai = await fetch(`${server.url}/external/api/inference/openai/v1/chat/completions`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${key.secret}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ model: 'service_3_pi', messages: [{ role: 'user', content: 'Hi' }], max_tokens: 5, stream: true }),
    });
    expect(openai.status).toBe(402);
    expect(JSON.stringify(await openai.json())).toContain('Monthly budget exceeded: key \\"frozen key\\"');
    expect(await head()).toBe(before);
    await patch(ann, team, key.keyId, { monthlyBudget: null }).expect(200);
    expect((await infer(key.secret)).status).toBe(200);
  });

  test('60 parallel requests at the edge of a budget: spend + holds never pass it, the rest get 402, spend shows in the key list', async () => {
    const s = server.services;
    const promptTokens = countTokens(renderPrompt({ config: 'service_3_pi', context, metadata: {}, now: new Date() }).text);
    const perRequest = tokenCost({ inputNanoUsdPerToken: 2500n, outputNanoUsdPerToken: 10000n }, promptTokens, MAX_TOKENS);
    const budget = perRequest * 6n - 1n; // five holds fit at once, a sixth does not
    const key = await newKey(ann, team, 'edge key');
    await patch(ann, team, key.keyId, { monthlyBudget: formatUsd(budget) }).expect(200);

    // Watch the key's spend and holds at the same instant while the requests run.
    const month = new Date().toISOString().slice(0, 7);
    const spendKey = (await s.readModels.keys('balances')).ws(team, 'key-spend', key.keyId);
    const holdKey = reservationKeys((...p) => s.ks.shared(...p), team).held;
    let watching = true;
    let highest = 0n;
    const watcher = (async () => {
      while (watching) {
        const [[, spent], [, held]] = (await s.redis.multi().hget(spendKey, month).hget(holdKey, `=k:${key.keyId}`).exec()) as [
          [null, string | null],
          [null, string | null],
        ];
        const total = BigInt(spent ?? '0') + BigInt(held ?? '0');
        if (total > highest) highest = total;
        await new Promise((r) => setTimeout(r, 2));
      }
    })();
    const results = await Promise.all(Array.from({ length: 60 }, () => infer(key.secret)));
    watching = false;
    await watcher;

    const ok = results.filter((r) => r.status === 200);
    const refused = results.filter((r) => r.status === 402);
    expect(ok.length + refused.length).toBe(60);
    expect(ok.length).toBeGreaterThanOrEqual(5);
    expect(refused.length).toBeGreaterThan(0);
    for (const r of refused)
      expect(r.body.detail).toMatch(
        new RegExp(
          `^Monthly budget exceeded: key "edge key" has a monthly budget of ${formatUsd(budget).replace('.', '\\.')} USD with [\\d.]+ USD left`,
        ),
      );
    expect(highest).toBeLessThanOrEqual(budget);

    // Every debit of the key is in its month-to-date spend, which stays within the budget.
    await s.progress.waitFor(await head(), 5000);
    let debited = 0n;
    for (const e of await s.store.readAll({ fromPosition: 0n, maxCount: 100_000 })) {
      if (e.type === 'TokensDebited' && (e.data as { keyId: string }).keyId === key.keyId)
        debited += BigInt((e.data as { amountNanoUsd: string }).amountNanoUsd);
    }
    expect(debited).toBeGreaterThan(0n);
    expect(debited).toBeLessThanOrEqual(budget);
    const entry = await listed(team, key.keyId);
    expect(entry?.monthToDateSpend).toBe(formatUsd(debited));
    expect(entry?.budgetRemaining).toBe(formatUsd(budget - debited));
    expect(parseUsd(String(entry?.monthToDateSpend))).toBe(debited);
    expect(await s.redis.get(holdKey)).toBeNull();

    // A rebuild of the balances read model replays the same spend and budget.
    await rebuildProjection({ store: s.store, redis: s.redis, ks: s.ks, projection: balancesProjection });
    expect(await listed(team, key.keyId)).toEqual(entry);
    // …and the script reads the rebuilt spend: a budget of exactly what was spent leaves nothing.
    await patch(ann, team, key.keyId, { monthlyBudget: formatUsd(debited) }).expect(200);
    const after = await infer(key.secret);
    expect(after.status).toBe(402);
    expect(after.body.detail).toContain(`monthly budget of ${formatUsd(debited)} USD with 0 USD left`);
  });
});

describe("a key's name in usage", () => {
  test('usage by key shows the current name after a rename, and a deleted key by its name, marked deleted', async () => {
    const key = await newKey(ann, team, 'usage key');
    expect((await infer(key.secret)).status).toBe(200);
    await server.services.progress.waitFor(await head(), 5000);
    const byKey = async () =>
      (
        (await api(server).get(`/v1/workspaces/${team}/usage?granularity=hour&groupBy=key`).set(ann.auth)).body.series as {
          keyId: string;
          keyName: string;
          keyDeleted: boolean;
        }[]
      ).find((x) => x.keyId === key.keyId);
    expect(await byKey()).toMatchObject({ keyName: 'usage key', keyDeleted: false });
    await patch(ann, team, key.keyId, { name: 'renamed usage key' }).expect(200);
    expect(await byKey()).toMatchObject({ keyName: 'renamed usage key', keyDeleted: false });
    await api(server).delete(`/v1/workspaces/${team}/keys/${key.keyId}`).set(ann.auth).expect(204);
    expect(await byKey()).toMatchObject({ keyName: 'renamed usage key', keyDeleted: true });
  });
});
