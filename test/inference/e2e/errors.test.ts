import { StoreUnavailable } from '../../../src/platform/eventstore/port';
import { Reservations } from '../../../src/billing/projections/balances/reservations';
import { chatCompletions, streaming } from '../../../src/inference/routes/schemas';
import { countTokens } from '../../../src/inference/tokenizer';
import { contractFor, expectMatchesContract } from '../../support/contract';
import { authHeaders, balanceOf, deleteKey, inferenceEvents, seedFundedKey, seedKey, settle } from '../int/support/seed';
import { fundedServerFixture, ScriptedBackend } from '../int/support/server';

/** Every error case of the inference routes, over HTTP. */

const SPEC = ['/external/api/inference', '/external/api/inference/streaming'];
const ALL = [...SPEC, '/external/api/inference/openai/v1/chat/completions'];
const body = { context: [{ type: 'Human', text: 'Hello there' }], config: 'service_3_pi', max_tokens: 20 };
const openAiBody = { model: 'service_3_pi', messages: [{ role: 'user', content: 'Hello there' }], max_tokens: 20 };
const bodyFor = (path: string) => (path.includes('openai') ? openAiBody : body);

const backend = new ScriptedBackend(() => ({ chunks: ['Hi', ' there', '!'] }));
const t = fundedServerFixture({}, { backend });
beforeEach(() => {
  backend.script = () => ({ chunks: ['Hi', ' there', '!'] });
});

function post(path: string, payload: unknown, headers: Record<string, string> = authHeaders(t.key.secret)) {
  return fetch(t.server.url + path, { method: 'POST', headers, body: typeof payload === 'string' ? payload : JSON.stringify(payload) });
}

async function expectDetail(res: Response, status: number): Promise<unknown> {
  expect(res.status).toBe(status);
  await expectMatchesContract(res.clone(), contractFor('POST', new URL(res.url).pathname));
  expect(res.headers.get('content-type')).toMatch(/application\/json/);
  expect(res.headers.get('x-request-id')).toBeTruthy();
  const json = (await res.json()) as { detail: unknown };
  expect(json).toHaveProperty('detail');
  return json.detail;
}

describe('401', () => {
  test.each(ALL)('%s: missing, malformed, unknown, deleted and expired keys', async (path) => {
    const cases: Array<Record<string, string>> = [
      { 'content-type': 'application/json' },
      { 'content-type': 'application/json', authorization: t.key.secret },
      { 'content-type': 'application/json', authorization: `Basic ${t.key.secret}` },
      { 'content-type': 'application/json', authorization: 'Bearer' },
      { 'content-type': 'application/json', authorization: 'Bearer  ' },
      { 'content-type': 'application/json', authorization: `Bearer ${t.key.secret} extra` },
      authHeaders('tg_unknown_key_000000000000000000'),
    ];
    for (const headers of cases) {
      const res = await post(path, bodyFor(path), headers);
      const detail = await expectDetail(res, 401);
      expect(typeof detail).toBe('string');
      expect(res.headers.get('www-authenticate')).toBe('Bearer');
    }
  });

  test('a deleted key fails at once; an expired key fails', async () => {
    const doomed = await seedFundedKey(t.server.services);
    expect((await post(SPEC[0], body, authHeaders(doomed.secret))).status).toBe(200);
    await deleteKey(t.server.services, doomed);
    expect(await expectDetail(await post(SPEC[0], body, authHeaders(doomed.secret)), 401)).toBe('Invalid API key');

    const expired = await seedKey(t.server.services, { expiresAt: new Date(Date.now() - 1000).toISOString() });
    for (const path of ALL) {
      expect(await expectDetail(await post(path, bodyFor(path), authHeaders(expired.secret)), 401)).toBe('API key expired');
    }
    const future = await seedFundedKey(t.server.services);
    const later = await seedKey(t.server.services, {
      workspaceId: future.workspaceId,
      expiresAt: new Date(Date.now() + 3600_000).toISOString(),
    });
    expect((await post(SPEC[0], body, authHeaders(later.secret))).status).toBe(200);
  });
});

test.each(ALL)('403 {"detail":"Forbidden"} for a key without the inference scope: %s', async (path) => {
  const k = await seedKey(t.server.services, { scopes: ['usage:read'] });
  const res = await post(path, bodyFor(path), authHeaders(k.secret));
  expect(await expectDetail(res, 403)).toBe('Forbidden');
});

describe('422, FastAPI style', () => {
  test.each(SPEC)('%s: invalid bodies', async (path) => {
    const bad: Array<[unknown, Array<string | number>]> = [
      [{ ...body, config: 'service_4' }, ['body', 'config']],
      [{ ...body, temperature: 2 }, ['body', 'temperature']],
      [{ ...body, top_p: -1 }, ['body', 'top_p']],
      [{ ...body, max_tokens: 0 }, ['body', 'max_tokens']],
      [{ ...body, max_tokens: 1025 }, ['body', 'max_tokens']],
      [{ ...body, max_tokens: 'ten' }, ['body', 'max_tokens']],
      [{ config: 'service_3_pi' }, ['body', 'context']],
      [{ ...body, context: 'hello' }, ['body', 'context']],
      [{ ...body, context: [{ type: 'human', text: 'x' }] }, ['body', 'context', 0, 'type']],
      [{ ...body, metadata: { user_timezone: 'Europe/Atlantis' } }, ['body', 'metadata', 'user_timezone']],
      [{ ...body, stop_tokens: [1, 2] }, ['body', 'stop_tokens', 0]],
      [[body], ['body']],
    ];
    for (const [payload, loc] of bad) {
      const detail = (await expectDetail(await post(path, payload), 422)) as Array<{ loc: unknown[]; msg: string; type: string }>;
      expect(Array.isArray(detail)).toBe(true);
      expect(detail.map((d) => d.loc)).toContainEqual(loc);
      for (const d of detail) {
        expect(d.loc[0]).toBe('body');
        expect(typeof d.msg).toBe('string');
        expect(typeof d.type).toBe('string');
      }
    }
  });

  test.each(ALL)('%s: a body that is not JSON, or no body at all', async (path) => {
    const detail = (await expectDetail(await post(path, '{"context": ['), 422)) as Array<{ loc: unknown[] }>;
    expect(detail[0].loc).toEqual(['body']);
    const res = await fetch(t.server.url + path, { method: 'POST', headers: { authorization: `Bearer ${t.key.secret}` } });
    expect(await expectDetail(res, 422)).toEqual([
      { loc: ['body'], msg: 'A JSON body is required, sent with the header Content-Type: application/json', type: 'missing' },
    ]);
  });

  test.each(ALL)('%s: a JSON body sent without Content-Type: application/json says so', async (path) => {
    // What `curl -d '{…}'` without -H 'Content-Type: application/json' sends.
    const res = await post(path, bodyFor(path), {
      authorization: `Bearer ${t.key.secret}`,
      'content-type': 'application/x-www-form-urlencoded',
    });
    expect(await expectDetail(res, 422)).toEqual([
      {
        loc: ['body'],
        msg: 'The body must be JSON sent with the header Content-Type: application/json (got application/x-www-form-urlencoded)',
        type: 'content_type',
      },
    ]);
  });

  test('the OpenAI route answers a body that is not JSON with an OpenAI error object too', async () => {
    const res = await post(ALL[2], '{"model": ', authHeaders(t.key.secret));
    expect(res.status).toBe(422);
    const json = (await res.json()) as { detail: unknown; error: unknown };
    expect(json.detail).toEqual([{ loc: ['body'], msg: 'Body is not valid JSON', type: 'json_invalid' }]);
    expect(json.error).toEqual({ message: 'Invalid request: body: Body is not valid JSON', type: 'invalid_request_error', code: null });
  });

  test('unknown fields are ignored', async () => {
    const res = await post(SPEC[0], { ...body, stream: false, model: 'whatever', tools: [{ x: 1 }], extra: { deep: [1] } });
    expect(res.status).toBe(200);
  });
});

describe('405: a method the path does not answer', () => {
  const MODELS = '/external/api/inference/openai/v1/models';
  test.each([
    ...ALL.map((path) => ['GET', path, 'POST'] as const),
    ['PUT', ALL[0], 'POST'] as const,
    ['POST', MODELS, 'GET, HEAD'] as const,
    ['DELETE', `${MODELS}/service_3_pi`, 'GET, HEAD'] as const,
  ])('%s %s: 405 with Allow: %s', async (method, path, allow) => {
    const res = await fetch(t.server.url + path, { method, headers: authHeaders(t.key.secret) });
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe(allow);
    const json = (await res.json()) as { detail: string };
    expect(json.detail).toBe(`Method Not Allowed: ${method} ${path} answers only ${allow}`);
  });
});

describe('400: prompt + max_tokens over 8192 tokens', () => {
  test.each(ALL)('%s names both numbers', async (path) => {
    const text = 'word '.repeat(8000); // about 8000 tokens
    const payload = path.includes('openai')
      ? { messages: [{ role: 'user', content: text }], max_tokens: 1000 }
      : { ...body, context: [{ type: 'Human', text }], max_tokens: 1000 };
    const detail = (await expectDetail(await post(path, payload), 400)) as string;
    const [, prompt] = /\((\d+) in the prompt/.exec(detail) ?? [];
    expect(Number(prompt)).toBeGreaterThan(7000);
    expect(detail).toContain('1000 for the completion');
    expect(detail).toContain('8192');
  });

  test('a prompt far too long is refused without tokenizing it all', async () => {
    const text = '🙂'.repeat(200_000);
    const started = Date.now();
    const detail = await expectDetail(await post(SPEC[0], { ...body, context: [{ type: 'Human', text }] }), 400);
    const answeredMs = Date.now() - started;
    expect(String(detail)).toContain('8192');
    // Sized to the machine, not a fixed 2 s: the whole answer takes less than tokenizing the whole
    // prompt once, timed right after on the same machine (about 1 s quiet, 5 s at load 15).
    const t0 = Date.now();
    expect(countTokens(text)).toBe(400_000);
    expect(answeredMs).toBeLessThan(Date.now() - t0);
  });

  test('just fitting is fine', async () => {
    const res = await post(SPEC[0], { ...body, context: [{ type: 'Human', text: 'word '.repeat(7000) }], max_tokens: 1 });
    expect(res.status).toBe(200);
  });
});

describe('402: insufficient balance', () => {
  test.each(ALL)('%s: USD amounts in the detail; nothing recorded, nothing held', async (path) => {
    const poor = await seedFundedKey(t.server.services, { usd: '0.001' });
    const res = await post(path, { ...bodyFor(path), max_tokens: 1000 }, authHeaders(poor.secret));
    const detail = (await expectDetail(res, 402)) as string;
    expect(detail).toMatch(/^Insufficient balance: 0\.001 USD available, 0\.01\d* USD required$/);
    expect(await inferenceEvents(t.server.services, res.headers.get('x-request-id')!)).toHaveLength(0);
    expect(await new Reservations(t.server.services.redis, t.server.services.ks).held(poor.workspaceId)).toBe(0n);
    // A smaller request fits.
    expect((await post(path, { ...bodyFor(path), max_tokens: 5 }, authHeaders(poor.secret))).status).toBe(200);
  });

  test('a workspace that never deposited', async () => {
    const k = await seedKey(t.server.services);
    expect(await expectDetail(await post(SPEC[0], body, authHeaders(k.secret)), 402)).toMatch(/^Insufficient balance: 0 USD available/);
  });
});

describe('503: the event store cannot be written', () => {
  test.each(ALL)('%s: the upstream call aborted, nothing sent or billed, the reservation released', async (path) => {
    const k = await seedFundedKey(t.server.services);
    const store = t.server.services.store;
    const append = store.append.bind(store);
    const spy = jest.spyOn(store, 'append').mockImplementation(async (stream, events, opts) => {
      if (stream.startsWith('inference-')) throw new StoreUnavailable('disk full');
      return append(stream, events, opts);
    });
    backend.calls = [];
    try {
      const res = await post(path, bodyFor(path), authHeaders(k.secret));
      expect(await expectDetail(res, 503)).toMatch(/event store/);
      expect(res.headers.get('retry-after')).toBe('1');
    } finally {
      spy.mockRestore();
    }
    // The upstream call starts beside the append (recording.test.ts): if it began, it was aborted.
    expect(backend.calls.every((c) => c.signal.aborted)).toBe(true);
    expect(await new Reservations(t.server.services.redis, t.server.services.ks).held(k.workspaceId)).toBe(0n);
  });

  test('non-streaming: a completion that cannot be recorded is not served', async () => {
    const k = await seedFundedKey(t.server.services);
    const store = t.server.services.store;
    const append = store.append.bind(store);
    const spy = jest.spyOn(store, 'append').mockImplementation(async (stream, events, opts) => {
      if (events.some((e) => e.type === 'TokensDebited')) throw new StoreUnavailable('disk full');
      return append(stream, events, opts);
    });
    try {
      const res = await post(SPEC[0], body, authHeaders(k.secret));
      expect(await expectDetail(res, 503)).toMatch(/event store cannot be written/);
    } finally {
      spy.mockRestore();
    }
  });
});

describe('the upstream fails', () => {
  test('streaming: a failure after the stream started ends it with an error event carrying a detail', async () => {
    backend.script = () => ({ chunks: ['one', ' two', ' three', ' four'], failAfter: 2 });
    const k = await seedFundedKey(t.server.services, { usd: '10' });
    const res = await post(SPEC[1], body, authHeaders(k.secret));
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/text\/event-stream/);
    expect(await expectMatchesContract(res.clone(), streaming)).toHaveLength(3);
    const wire = await res.text();
    const frames = wire.split('\n\n').filter(Boolean);
    expect(frames.slice(0, 2).map((f) => JSON.parse(f.replace(/^data: /, '')).text)).toEqual(['one', ' two']);
    expect(frames[2]).toMatch(/^event: error\ndata: \{"detail":"[^"]+"\}$/);
    expect(frames).toHaveLength(3);
    // Billed for what was generated: the prompt and "one two".
    const events = await inferenceEvents(t.server.services, res.headers.get('x-request-id')!);
    expect(events.map((e) => e.type)).toEqual(['InferenceRequested', 'InferenceCompleted', 'TokensDebited']);
    expect(events[1].data).toMatchObject({ finishReason: 'upstream_error', outputTokens: 2 });
  });

  test('OpenAI streaming: a failure after start is an error object (no [DONE])', async () => {
    backend.script = () => ({ chunks: ['one', ' two', ' three'], failAfter: 1 });
    const res = await post(ALL[2], { ...openAiBody, stream: true });
    await expectMatchesContract(res.clone(), chatCompletions);
    const wire = await res.text();
    expect(wire).toContain('"error":{"message"');
    expect(wire).not.toContain('[DONE]');
  });

  test.each(ALL)('%s: a failure before any output is a 502, billed nothing', async (path) => {
    backend.script = () => ({ chunks: ['never'], failAfter: 0 });
    const k = await seedFundedKey(t.server.services, { usd: '10' });
    const res = await post(path, { ...bodyFor(path), stream: path.includes('openai') }, authHeaders(k.secret));
    expect(await expectDetail(res, 502)).toMatch(/upstream/);
    const events = await inferenceEvents(t.server.services, res.headers.get('x-request-id')!);
    expect(events[2].data).toMatchObject({ inputTokens: 0, outputTokens: 0, amountNanoUsd: '0' });
    await settle(t.server.services);
    expect(await balanceOf(t.server.services, k.workspaceId)).toBe(10_000_000_000n);
  });

  test('non-streaming: a failure after partial output is a 502 and bills nothing (the caller got nothing)', async () => {
    backend.script = () => ({ chunks: ['one', ' two', ' three'], failAfter: 2 });
    const res = await post(SPEC[0], body);
    await expectDetail(res, 502);
    const events = await inferenceEvents(t.server.services, res.headers.get('x-request-id')!);
    expect(events[1].data).toMatchObject({ finishReason: 'upstream_error', inputTokens: 0, outputTokens: 0 });
  });
});

test('OpenAI errors also carry an OpenAI error object', async () => {
  const res = await post(ALL[2], openAiBody, authHeaders('tg_nope'));
  expect(res.status).toBe(401);
  await expectMatchesContract(res.clone(), chatCompletions);
  const json = (await res.json()) as { detail: string; error: { message: string; type: string } };
  expect(json.detail).toMatch(/^Invalid API key: it looks like a tollgate key but is mistyped/);
  expect(json.error).toEqual({ message: json.detail, type: 'authentication_error', code: 'invalid_api_key' });
  const bad = await post(ALL[2], { messages: [] });
  await expectMatchesContract(bad.clone(), chatCompletions);
  const j = (await bad.json()) as { detail: unknown[]; error: { message: string } };
  expect(bad.status).toBe(422);
  expect(Array.isArray(j.detail)).toBe(true);
  expect(j.error.message).toMatch(/^Invalid request: body\.messages/);
});

test("an authenticated request marks the key as used (the key list's last used)", async () => {
  const { keysLastUsed } = await import('../../../src/accounts/key-last-used');
  const k = await seedFundedKey(t.server.services);
  const s = t.server.services;
  expect((await keysLastUsed(s.redis, s.ks, [k.keyId])).get(k.keyId)).toBeNull();
  expect((await post(SPEC[0], body, authHeaders(k.secret))).status).toBe(200);
  let used: string | null | undefined = null;
  // A deadline, not 50 polls of 10 ms (half a second, which a stalled machine can spend on nothing).
  for (const deadline = Date.now() + 10_000; !used && Date.now() < deadline;) {
    used = (await keysLastUsed(s.redis, s.ks, [k.keyId])).get(k.keyId);
    if (!used) await new Promise((r) => setTimeout(r, 10));
  }
  expect(Date.parse(used!)).toBeGreaterThan(Date.now() - 60_000);
});
