import { reservationKeys } from '../../../src/billing';
import { rateCounterKey } from '../../../src/inference/routes/rate-limit';
import type { TestServer } from '../../support/harness';
import { authHeaders, fund, seedFundedKey, seedKey } from '../int/support/seed';
import { startInferenceServer } from '../int/support/server';

const INFER = '/external/api/inference';
const STREAM = '/external/api/inference/streaming';
const CHAT = '/external/api/inference/openai/v1/chat/completions';
const valid = JSON.stringify({ context: [{ type: 'Human', text: 'hi' }], config: 'service_3_pi', max_tokens: 3 });
const invalid = JSON.stringify({ context: 'not a list' });

let server: TestServer;
beforeAll(async () => {
  server = await startInferenceServer();
});
afterAll(() => server.close());

const post = (path: string, secret: string, body: string) =>
  fetch(server.url + path, { method: 'POST', headers: authHeaders(secret), body });

test('request 101 within a minute on one key gets 429, across both endpoints', async () => {
  const key = await seedFundedKey(server.services);
  // Successes carry the headers too, counting down.
  const first = await post(INFER, key.secret, valid);
  expect(first.status).toBe(200);
  expect(first.headers.get('x-ratelimit-limit-requests')).toBe('100');
  expect(first.headers.get('x-ratelimit-remaining-requests')).toBe('99');
  expect(first.headers.get('x-ratelimit-reset-requests')).toMatch(/^\d+s$/);
  const second = await post(STREAM, key.secret, valid);
  await second.text();
  expect(second.headers.get('x-ratelimit-remaining-requests')).toBe('98');

  // Requests 3..100, alternating between the endpoints; invalid bodies count too (rate limit comes before validation).
  const statuses = await Promise.all(
    Array.from({ length: 98 }, (_, i) =>
      post(i % 2 ? INFER : STREAM, key.secret, i % 3 ? invalid : valid).then(async (r) => (await r.text(), r.status)),
    ),
  );
  expect(statuses.every((st) => st === 200 || st === 422)).toBe(true);

  for (const path of [INFER, STREAM, CHAT]) {
    const res = await post(path, key.secret, valid);
    expect(res.status).toBe(429);
    const body = (await res.json()) as { detail: string };
    expect(body.detail).toMatch(/^Rate limit reached: 100 requests per minute/);
    const retryAfter = Number(res.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThan(0);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect(res.headers.get('x-ratelimit-limit-requests')).toBe('100');
    expect(res.headers.get('x-ratelimit-remaining-requests')).toBe('0');
    expect(res.headers.get('x-ratelimit-reset-requests')).toBe(`${retryAfter}s`);
    expect(res.headers.get('x-request-id')).toBeTruthy();
  }

  // Another key of the same workspace has its own budget.
  const other = await seedFundedKey(server.services);
  expect((await post(INFER, other.secret, valid)).status).toBe(200);
});

test('the model list carries the rate-limit headers without counting against the limit', async () => {
  const key = await seedFundedKey(server.services, { rateLimit: 5 });
  const models = () => fetch(`${server.url}/external/api/inference/openai/v1/models`, { headers: authHeaders(key.secret) });
  const before = await models();
  expect(before.status).toBe(200);
  expect(before.headers.get('x-ratelimit-limit-requests')).toBe('5');
  expect(before.headers.get('x-ratelimit-remaining-requests')).toBe('5');
  expect(before.headers.get('x-ratelimit-reset-requests')).toMatch(/^\d+s$/);
  await (await post(INFER, key.secret, valid)).text();
  const one = await fetch(`${server.url}/external/api/inference/openai/v1/models/service_3_pi`, { headers: authHeaders(key.secret) });
  expect(one.status).toBe(200);
  expect(one.headers.get('x-ratelimit-remaining-requests')).toBe('4');
  expect((await models()).headers.get('x-ratelimit-remaining-requests')).toBe('4');
});

test("a key's own limit (raised or lowered by an operator) overrides the default", async () => {
  const key = await seedFundedKey(server.services, { rateLimit: 3 });
  for (let i = 0; i < 3; i++) {
    const res = await post(i % 2 ? STREAM : INFER, key.secret, valid);
    await res.text();
    expect(res.status).toBe(200);
    expect(res.headers.get('x-ratelimit-limit-requests')).toBe('3');
  }
  expect((await post(CHAT, key.secret, valid)).status).toBe(429);

  const raised = await seedFundedKey(server.services, { rateLimit: 150 });
  const statuses = await Promise.all(Array.from({ length: 150 }, () => post(INFER, raised.secret, invalid).then((r) => r.status)));
  expect(statuses.filter((st) => st === 429)).toHaveLength(0);
  expect((await post(INFER, raised.secret, invalid)).status).toBe(429);
});

test('an unauthenticated request never touches a key budget', async () => {
  const res = await post(INFER, 'tg_unknown', valid);
  expect(res.status).toBe(401);
  expect(res.headers.get('x-ratelimit-limit-requests')).toBeNull();
});

describe('round trips to Redis before generation', () => {
  /** The scripts a request runs on the api's Redis connection: EVALSHA / EVAL with their first key. */
  async function scriptsOf(send: () => Promise<Response>): Promise<string[]> {
    const redis = server.services.redis as unknown as { sendCommand(cmd: { name: string; args: unknown[] }): unknown };
    const original = redis.sendCommand;
    const seen: string[] = [];
    redis.sendCommand = function (this: unknown, cmd: { name: string; args: unknown[] }) {
      // markPending (its first key, `held` = `resv:{wsId}`) runs after the completion, not before generation;
      // the key's lookup (lookup.lua, its first key the key index's pointer) is the trip before admission.
      const first = String(cmd.args[2]);
      if ((cmd.name === 'evalsha' || cmd.name === 'eval') && !first.includes(':resv:') && !first.endsWith(':proj:{keys}:active'))
        seen.push(first);
      // eslint-disable-next-line prefer-rest-params -- forwards every argument ioredis passes, however many
      return original.apply(this, arguments as unknown as [typeof cmd]);
    } as typeof original;
    try {
      const res = await send();
      await res.text();
      expect(res.status).toBe(200);
    } finally {
      redis.sendCommand = original;
    }
    return seen;
  }

  test("one script admits a request after the key's lookup: rate-limit count and reservation on the workspace's slot", async () => {
    const key = await seedFundedKey(server.services);
    const counter = rateCounterKey(server.services.ks.shared('rl', 'inference'), key.workspaceId, key.keyId);
    const scripts = await scriptsOf(() => post(INFER, key.secret, valid));
    // The admission script (its first key the key's counter) counts and holds: no script of its own for either.
    expect(scripts).toEqual([counter]);
    const res = await post(INFER, key.secret, valid);
    expect(res.headers.get('x-ratelimit-remaining-requests')).toBe('98');
  });

  test('a key with an expiry and several scopes is admitted by the same one script; an expired one is not counted', async () => {
    const key = await seedKey(server.services, {
      expiresAt: new Date(Date.now() + 3_600_000).toISOString(),
      scopes: ['billing', 'inference'],
    });
    await fund(server.services, key.workspaceId, { usd: '10' });
    const scripts = await scriptsOf(() => post(INFER, key.secret, valid));
    expect(scripts).toEqual([rateCounterKey(server.services.ks.shared('rl', 'inference'), key.workspaceId, key.keyId)]);
    expect(await server.services.redis.get(rateCounterKey(server.services.ks.shared('rl', 'inference'), key.workspaceId, key.keyId))).toBe(
      '1',
    );
    const expired = await seedKey(server.services, { expiresAt: new Date(Date.now() - 1000).toISOString() });
    expect((await post(INFER, expired.secret, valid)).status).toBe(401);
    expect(
      await server.services.redis.get(rateCounterKey(server.services.ks.shared('rl', 'inference'), expired.workspaceId, expired.keyId)),
    ).toBeNull();
  });

  test('a long prompt is counted only once its key is known: two trips for a key this process has not admitted, then one', async () => {
    const key = await seedFundedKey(server.services);
    const long = JSON.stringify({ context: [{ type: 'Human', text: 'word '.repeat(1000) }], config: 'service_3_pi', max_tokens: 3 });
    expect(await scriptsOf(() => post(INFER, key.secret, long))).toHaveLength(2);
    expect(await scriptsOf(() => post(INFER, key.secret, long))).toHaveLength(1);
    // An unknown key's long prompt is refused before it is counted: still the 401 it always was.
    const res = await post(INFER, 'tg_unknown', long);
    expect(res.status).toBe(401);
  });

  test('a key without the inference scope is refused (403) and not counted', async () => {
    const key = await seedKey(server.services, { scopes: ['billing'] });
    expect((await post(INFER, key.secret, valid)).status).toBe(403);
    expect(
      await server.services.redis.get(rateCounterKey(server.services.ks.shared('rl', 'inference'), key.workspaceId, key.keyId)),
    ).toBeNull();
  });
});

test('a request over its rate limit holds nothing: the admission script stops at the count', async () => {
  const key = await seedFundedKey(server.services, { rateLimit: 1 });
  expect((await post(INFER, key.secret, invalid)).status).toBe(422);
  const res = await post(INFER, key.secret, valid);
  expect(res.status).toBe(429);
  expect(
    await server.services.redis.hget(reservationKeys((...p) => server.services.ks.shared(...p), key.workspaceId).held, '=total'),
  ).toBeNull();
});
