import { randomUUID } from 'node:crypto';
import { tokenCost } from '../../../src/inference/metering';
import { formatUsd } from '../../../src/platform/money';
import { periodWindow } from '../../../src/platform/budget-periods';
import { renderPrompt } from '../../../src/inference/prompt';
import { countTokens } from '../../../src/inference/tokenizer';
import { startTestServer, TestServer } from '../../support/harness';
import { addMember, api, createWorkspace, fund, newUser, TestUser } from './helpers';

/**
 * Budgets with periods at the inference endpoints, against the started service (real Redis, SQLite
 * store, projector): a key's daily and weekly budget, a member's budget across their keys, parallel
 * requests at the edge, the reset at the period boundary (the service's clock, no sleeps), and the
 * refusal's facts on every route.
 */
let server: TestServer;
let ann: TestUser; // admin
let bob: TestUser; // member
let team: string;

beforeAll(async () => {
  server = await startTestServer();
  [ann, bob] = await Promise.all([newUser(server, 'ann'), newUser(server, 'bob')]);
  team = await createWorkspace(server, ann, 'Periods');
  await addMember(server, ann, team, bob);
  await fund(server, team, { depositUsd: 1000 });
});
afterAll(() => server?.close());

const head = () => server.services.store.headPosition();
const settled = async () => server.services.progress.waitFor(await head(), 10_000);
const newKey = async (by: TestUser, name: string) => {
  const res = await api(server).post(`/v1/workspaces/${team}/keys`).set(by.auth).send({ name });
  expect(res.status).toBe(201);
  return res.body as { keyId: string; secret: string };
};
const patchKey = (keyId: string, body: object) => api(server).patch(`/v1/workspaces/${team}/keys/${keyId}`).set(ann.auth).send(body);
const memberBudget = (by: TestUser, userId: string, body: object) =>
  api(server).put(`/v1/workspaces/${team}/members/${userId}/budget`).set(by.auth).send(body);

const context = [{ type: 'Human' as const, text: 'Write me a short, friendly greeting.' }];
const MAX_TOKENS = 40;
type Refusal = {
  detail?: string;
  budget?: Record<string, unknown>;
  error?: { code: string | null; message: string; budget?: Record<string, unknown> };
};
const infer = (secret: string) =>
  fetch(`${server.url}/external/api/inference`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${secret}`, 'Content-Type': 'application/json' },
    body: JSON.stringify({ context, config: 'service_3_pi', max_tokens: MAX_TOKENS }),
  }).then(async (r) => ({ status: r.status, body: (await r.json()) as Refusal }));

/** What one request holds while it runs: its prompt plus max_tokens of output. */
const perRequest = () =>
  tokenCost(
    { inputNanoUsdPerToken: 2500n, outputNanoUsdPerToken: 10000n },
    countTokens(renderPrompt({ config: 'service_3_pi', context, metadata: {}, now: new Date() }).text),
    MAX_TOKENS,
  );

/** The sum of the key's TokensDebited amounts in the store: what was really billed. */
async function debitedBy(keyIds: string[]): Promise<bigint> {
  await settled();
  let sum = 0n;
  for (const e of await server.services.store.readAll({ fromPosition: 0n, maxCount: 1_000_000 })) {
    const d = e.data as { keyId?: string; amountNanoUsd?: string };
    if (e.type === 'TokensDebited' && keyIds.includes(d.keyId!)) sum += BigInt(d.amountNanoUsd!);
  }
  return sum;
}

describe('a budget period that does not exist', () => {
  test('a key or a member budget with an unknown period: 422 naming the field; nothing appended', async () => {
    const key = await newKey(ann, 'bad period key');
    const before = await head();
    for (const body of [
      { budget: '5', budgetPeriod: 'hourly' },
      { budgetPeriod: 'fortnightly' },
      { budget: '5', budgetPeriod: 7 },
      { monthlyBudget: '5', budgetPeriod: 'daily' },
    ]) {
      const res = await patchKey(key.keyId, body);
      expect({ body, status: res.status }).toEqual({ body, status: 422 });
      expect(JSON.stringify(res.body.detail)).toMatch(
        /budgetPeriod must be one of daily, weekly, monthly|monthlyBudget is a monthly budget/,
      );
    }
    const member = await memberBudget(ann, bob.userId, { budget: '5', period: 'yearly' });
    expect(member.status).toBe(422);
    expect(member.body.detail).toEqual([
      expect.objectContaining({ loc: ['body', 'period'], msg: 'budgetPeriod must be one of daily, weekly, monthly' }),
    ]);
    // A period alone, for a key without a budget: nothing to reset.
    const alone = await patchKey(key.keyId, { budgetPeriod: 'daily' });
    expect(alone.status).toBe(422);
    expect(JSON.stringify(alone.body.detail)).toContain('needs a budget');
    expect(await head()).toBe(before);
  });

  test('a member budget: admins only (403), an unknown user 404; nothing appended', async () => {
    const before = await head();
    expect((await memberBudget(bob, bob.userId, { budget: '5', period: 'daily' })).status).toBe(403);
    expect((await memberBudget(ann, randomUUID(), { budget: '5', period: 'daily' })).body).toEqual({ detail: 'Member not found' });
    expect(await head()).toBe(before);
  });
});

describe('a key budget with a period', () => {
  test('50 parallel requests at the edge of a daily budget: what is billed never passes it; each 402 says which budget, what is left and when it resets', async () => {
    const key = await newKey(ann, 'daily edge key');
    const budget = perRequest() * 5n - 1n; // four holds fit at once, a fifth does not
    const set = await patchKey(key.keyId, { budget: formatUsd(budget), budgetPeriod: 'daily' });
    expect(set.status).toBe(200);
    const day = periodWindow('daily', server.services.now());
    expect(set.body).toMatchObject({
      budget: formatUsd(budget),
      budgetPeriod: 'daily',
      budgetPeriodId: day.id,
      budgetSpent: '0',
      budgetResetsAt: day.resetsAt.toISOString(),
      monthlyBudget: null,
    });

    const results = await Promise.all(Array.from({ length: 50 }, () => infer(key.secret)));
    const refused = results.filter((r) => r.status === 402);
    expect(results.filter((r) => r.status === 200).length + refused.length).toBe(50);
    expect(refused.length).toBeGreaterThan(0);
    for (const r of refused) {
      expect(r.body.detail).toMatch(
        /^Daily budget exceeded: key "daily edge key" has a daily budget of [\d.]+ USD with [\d.]+ USD left today \(UTC\)/,
      );
      expect(r.body.detail).toContain(`It resets at ${day.resetsAt.toISOString()}`);
      expect(r.body.budget).toMatchObject({
        scope: 'key',
        keyId: key.keyId,
        userId: null,
        period: 'daily',
        limit: formatUsd(budget),
        resetsAt: day.resetsAt.toISOString(),
      });
    }
    const billed = await debitedBy([key.keyId]);
    expect(billed).toBeGreaterThan(0n);
    expect(billed).toBeLessThanOrEqual(budget);
    const listed = ((await api(server).get(`/v1/workspaces/${team}/keys`).set(ann.auth)).body.keys as Record<string, unknown>[]).find(
      (k) => k.keyId === key.keyId,
    );
    expect(listed).toMatchObject({ budgetSpent: formatUsd(billed), budgetRemaining: formatUsd(budget - billed) });
  });

  test('the period resets at its boundary (daily at 00:00 UTC, weekly on Monday 00:00 UTC), by the service clock', async () => {
    const s = server.services;
    const realNow = s.now;
    const key = await newKey(ann, 'resetting key');
    expect((await infer(key.secret)).status).toBe(200);
    // Room for exactly one request a period: after today's, what is left is less than one needs.
    const budget = perRequest();
    await patchKey(key.keyId, { budget: formatUsd(budget), budgetPeriod: 'daily' }).expect(200);
    try {
      for (const period of ['daily', 'weekly'] as const) {
        await patchKey(key.keyId, { budgetPeriod: period }).expect(200);
        // Every debit so far was recorded today (the store's own clock), so in this day and week.
        const spent = await debitedBy([key.keyId]);
        const { resetsAt } = periodWindow(period, realNow());
        s.now = () => new Date(resetsAt.getTime() - 1);
        const last = await infer(key.secret);
        expect(last.status).toBe(402);
        expect(last.body.budget).toMatchObject({
          period,
          spent: formatUsd(spent),
          remaining: formatUsd(budget > spent ? budget - spent : 0n),
          resetsAt: resetsAt.toISOString(),
        });
        s.now = () => resetsAt;
        const next = await infer(key.secret);
        expect({ period, status: next.status, detail: next.body.detail }).toEqual({ period, status: 200, detail: undefined });
      }
      // Monthly (the default) has not reset inside the month: the same spend still counts.
      await patchKey(key.keyId, { budgetPeriod: 'monthly' }).expect(200);
      s.now = realNow;
      expect((await infer(key.secret)).status).toBe(402);
    } finally {
      s.now = realNow;
    }
  });

  test('the OpenAI-compatible route answers an OpenAI error object with the same facts', async () => {
    const key = await newKey(ann, 'openai budget key');
    await patchKey(key.keyId, { budget: '0', budgetPeriod: 'weekly' }).expect(200);
    const res = await fetch(`${server.url}/external/api/inference/openai/v1/chat/completions`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${key.secret}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ model: 'service_3_pi', messages: [{ role: 'user', content: 'Hi' }], max_tokens: 5 }),
    });
    expect(res.status).toBe(402);
    const body = (await res.json()) as Refusal;
    const week = periodWindow('weekly', new Date());
    expect(body.error).toMatchObject({ type: 'insufficient_quota', code: 'budget_exceeded', message: body.detail });
    expect(body.error?.budget).toMatchObject({
      scope: 'key',
      period: 'weekly',
      limit: '0',
      remaining: '0',
      resetsAt: week.resetsAt.toISOString(),
    });
    expect(body.detail).toMatch(/^Weekly budget exceeded: key "openai budget key"/);
  });
});

describe("a member's budget across their keys", () => {
  test("parallel requests on two of bob's keys never pass his budget together; ann's key is not limited; the members list shows it", async () => {
    const [one, two] = [await newKey(bob, 'bob one'), await newKey(bob, 'bob two')];
    const annsKey = await newKey(ann, 'ann unlimited');
    const budget = perRequest() * 4n - 1n;
    const set = await memberBudget(ann, bob.userId, { budget: formatUsd(budget), period: 'daily' });
    expect(set.status).toBe(200);
    const day = periodWindow('daily', server.services.now());
    expect(set.body).toEqual({
      workspaceId: team,
      userId: bob.userId,
      budget: {
        budget: formatUsd(budget),
        period: 'daily',
        periodId: day.id,
        spent: '0',
        remaining: formatUsd(budget),
        resetsAt: day.resetsAt.toISOString(),
      },
    });

    const results = await Promise.all(Array.from({ length: 50 }, (_, i) => infer(i % 2 ? one.secret : two.secret)));
    const refused = results.filter((r) => r.status === 402);
    expect(refused.length).toBeGreaterThan(0);
    for (const r of refused) {
      expect(r.body.detail).toMatch(/^Daily member budget exceeded: user \S+ \(every key they created, key "bob (one|two)" among them\)/);
      expect(r.body.budget).toMatchObject({
        scope: 'member',
        userId: bob.userId,
        period: 'daily',
        limit: formatUsd(budget),
        resetsAt: day.resetsAt.toISOString(),
      });
    }
    const billed = await debitedBy([one.keyId, two.keyId]);
    expect(billed).toBeGreaterThan(0n);
    expect(billed).toBeLessThanOrEqual(budget);
    expect((await infer(annsKey.secret)).status).toBe(200);

    const members = (await api(server).get(`/v1/workspaces/${team}/members`).set(bob.auth)).body.members as Array<{
      userId: string;
      budget: unknown;
    }>;
    expect(members.find((m) => m.userId === bob.userId)?.budget).toMatchObject({ spent: formatUsd(billed), period: 'daily' });
    expect(members.find((m) => m.userId === ann.userId)?.budget).toBeNull();
    // Removing it lets bob's keys through again.
    await memberBudget(ann, bob.userId, { budget: null }).expect(200);
    expect((await infer(one.secret)).status).toBe(200);
  });
});

describe('rolling or deleting a key: its creator or an admin (finding F-2)', () => {
  test("a member whose budget is 0 may not roll or delete an admin's key (403, nothing appended); rolling their own keeps their budget on the new secret", async () => {
    const annsKey = await newKey(ann, 'ann roll target');
    const bobsKey = await newKey(bob, 'bob own roll');
    await memberBudget(ann, bob.userId, { budget: '0', period: 'daily' }).expect(200);
    try {
      await settled();
      const before = await head();
      const roll = await api(server)
        .post(`/v1/workspaces/${team}/keys/${annsKey.keyId}/roll`)
        .set(bob.auth)
        .send({ gracePeriodSeconds: 86_400 });
      expect([roll.status, roll.body]).toEqual([403, { detail: "Only the key's creator or a workspace admin may roll this key" }]);
      const del = await api(server).delete(`/v1/workspaces/${team}/keys/${annsKey.keyId}`).set(bob.auth);
      expect([del.status, del.body]).toEqual([403, { detail: "Only the key's creator or a workspace admin may delete this key" }]);
      expect(await head()).toBe(before);
      expect((await infer(annsKey.secret)).status).toBe(200);

      // His own key: rolled, and the new secret is still capped by his budget.
      const own = await api(server).post(`/v1/workspaces/${team}/keys/${bobsKey.keyId}/roll`).set(bob.auth).send({});
      expect(own.status).toBe(200);
      const refused = await infer(own.body.secret);
      expect(refused.status).toBe(402);
      expect(refused.body.budget).toMatchObject({ scope: 'member', userId: bob.userId, limit: '0' });
      // An admin may still roll a member's key.
      expect((await api(server).post(`/v1/workspaces/${team}/keys/${bobsKey.keyId}/roll`).set(ann.auth).send({})).status).toBe(200);
    } finally {
      await memberBudget(ann, bob.userId, { budget: null }).expect(200);
    }
  });
});
