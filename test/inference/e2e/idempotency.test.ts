import { randomUUID } from 'node:crypto';
import { requested } from '../../../src/inference/metering';
import { tokenCost } from '../../../src/inference/metering';
import type { InferenceCompleted, TokensDebited } from '../../../src/inference/events';
import { IdempotencyStore } from '../../../src/inference/idempotency/store';
import { requestHash } from '../../../src/inference/routes/idempotency';
import { Reservations } from '../../../src/billing/projections/balances/reservations';
import { streams } from '../../../src/platform/streams';
import type { TestServer } from '../../support/harness';
import { authHeaders, balanceOf, inferenceEvents, seedFundedKey, SeededKey, settle } from '../int/support/seed';
import { ScriptedBackend, startInferenceServer } from '../int/support/server';

/** Idempotency-Key on the inference routes: a retry replays the recorded answer and is never billed twice. */

const INFER = '/external/api/inference';
const STREAM = '/external/api/inference/streaming';
const CHAT = '/external/api/inference/openai/v1/chat/completions';
const DAY_MS = 86_400_000;

let server: TestServer;
let key: SeededKey;
/** Slow enough that a retry can arrive while the first call runs. */
const backend = new ScriptedBackend(() => ({ chunks: ['Hello', ' there', ', friend', '. 🦊'], delayMs: 60 }));
beforeAll(async () => {
  server = await startInferenceServer({}, { backend, idempotencyLeaseMs: 2000 });
  key = await seedFundedKey(server.services, { usd: '100' });
});
afterAll(() => server.close());

const post = (path: string, body: unknown, idem?: string) =>
  fetch(server.url + path, {
    method: 'POST',
    headers: { ...authHeaders(key.secret), ...(idem !== undefined ? { 'Idempotency-Key': idem } : {}) },
    body: JSON.stringify(body),
  });
const body = (text = 'Hi') => ({ context: [{ type: 'Human', text }], config: 'service_3_pi', max_tokens: 30 });

async function debitsOf(requestId: string): Promise<TokensDebited['data'][]> {
  return (await inferenceEvents(server.services, requestId))
    .filter((e) => e.type === 'TokensDebited')
    .map((e) => e.data as TokensDebited['data']);
}

async function workspaceDebits(): Promise<TokensDebited['data'][]> {
  await settle(server.services);
  return (await server.services.store.readAll())
    .filter((e) => e.type === 'TokensDebited')
    .map((e) => e.data as TokensDebited['data'])
    .filter((d) => d.workspaceId === key.workspaceId);
}

test('a retry with the same key and body replays the reply, marked, and is billed once', async () => {
  const idem = randomUUID();
  const before = (await workspaceDebits()).length;
  const first = await post(INFER, body(), idem);
  expect(first.status).toBe(200);
  expect(first.headers.get('idempotent-replayed')).toBeNull();
  const firstText = await first.text();
  const again = await post(INFER, body(), idem);
  expect(again.status).toBe(200);
  expect(again.headers.get('idempotent-replayed')).toBe('true');
  expect(await again.text()).toBe(firstText);
  for (const h of ['x-request-id', 'x-usage-cost-usd', 'x-usage-input-tokens', 'x-usage-output-tokens', 'content-type']) {
    expect(again.headers.get(h)).toBe(first.headers.get(h));
  }
  expect((await workspaceDebits()).length).toBe(before + 1);
});

test('a non-streaming caller who gives up: the call runs on, its retry gets it replayed, one debit (the SDK timeout-and-retry case)', async () => {
  const idem = randomUUID();
  const b = body('Tell me a long story about the sea.');
  const before = (await workspaceDebits()).length;
  const calls = backend.calls.length;
  const ac = new AbortController();
  const first = fetch(server.url + INFER, {
    method: 'POST',
    headers: { ...authHeaders(key.secret), 'Idempotency-Key': idem },
    body: JSON.stringify(b),
    signal: ac.signal,
  }).catch(() => null);
  // Give up once the generation has started (the SDK's timeout), as a caller that receives nothing.
  for (const deadline = Date.now() + 15_000; backend.calls.length === calls && Date.now() < deadline;)
    await new Promise((r) => setTimeout(r, 5));
  ac.abort();
  expect(await first).toBeNull();
  // Retries with the same key: 409 while the first call still runs, then its recorded answer.
  let again: Response | undefined;
  for (const deadline = Date.now() + 15_000; Date.now() < deadline;) {
    again = await post(INFER, b, idem);
    if (again.status !== 409) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  expect(again!.status).toBe(200);
  expect(again!.headers.get('idempotent-replayed')).toBe('true');
  expect(((await again!.json()) as { text: string }).text).toBe('Hello there, friend. 🦊');
  const debits = (await workspaceDebits()).slice(before);
  expect(debits).toHaveLength(1);
  expect(debits[0].outputTokens).toBeGreaterThan(0);
  expect(backend.calls.length).toBe(calls + 1);
});

test.each([
  [STREAM, body('stream me')],
  [`${STREAM}?include_usage=true`, body('stream me with usage')],
  [CHAT, { model: 'service_3_pi', messages: [{ role: 'user', content: 'stream' }], stream: true, stream_options: { include_usage: true } }],
])('a streamed reply is streamed again, byte for byte: %s', async (path, b) => {
  const idem = randomUUID();
  const first = await post(path, b, idem);
  const original = await first.text();
  expect(original).toMatch(/^data: /);
  const again = await post(path, b, idem);
  expect(again.headers.get('content-type')).toMatch(/^text\/event-stream/);
  expect(again.headers.get('idempotent-replayed')).toBe('true');
  expect(await again.text()).toBe(original);
  expect(await debitsOf(first.headers.get('x-request-id')!)).toHaveLength(1);
});

test('the same key with another body is 422 naming the header, and changes nothing', async () => {
  const idem = randomUUID();
  expect((await post(INFER, body('one'), idem)).status).toBe(200);
  const calls = backend.calls.length;
  const other = await post(INFER, body('two'), idem);
  expect(other.status).toBe(422);
  const detail = ((await other.json()) as { detail: Array<{ loc: string[]; msg: string }> }).detail;
  expect(detail[0].loc).toEqual(['header', 'Idempotency-Key']);
  expect(detail[0].msg).toMatch(/different request/);
  // Another route with the same body is another request too.
  expect((await post(STREAM, body('one'), idem)).status).toBe(422);
  expect(backend.calls.length).toBe(calls);
});

test('a retry whose JSON has the same keys in another order is the same request: replayed, not 422', async () => {
  const idem = randomUUID();
  const chat = { model: 'service_3_pi', messages: [{ role: 'user', content: 'order' }], max_tokens: 30 };
  const first = await post(CHAT, chat, idem);
  expect(first.status).toBe(200);
  const reordered = { max_tokens: 30, messages: [{ content: 'order', role: 'user' }], model: 'service_3_pi' };
  const again = await post(CHAT, reordered, idem);
  expect(again.status).toBe(200);
  expect(again.headers.get('idempotent-replayed')).toBe('true');
  expect(await again.text()).toBe(await first.text());
});

test('retries racing the original: one generation, the others 409 with Retry-After, then the replay', async () => {
  const idem = randomUUID();
  const calls = backend.calls.length;
  const answers = await Promise.all(Array.from({ length: 5 }, () => post(INFER, body('race'), idem)));
  const statuses = answers.map((a) => a.status).sort();
  expect(statuses).toEqual([200, 409, 409, 409, 409]);
  for (const a of answers.filter((x) => x.status === 409)) {
    expect(Number(a.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(((await a.json()) as { detail: string }).detail).toMatch(/Idempotency-Key is still running/);
  }
  expect(backend.calls.length).toBe(calls + 1);
  const winner = answers.find((a) => a.status === 200)!;
  const replay = await post(INFER, body('race'), idem);
  expect(replay.headers.get('idempotent-replayed')).toBe('true');
  expect(replay.headers.get('x-request-id')).toBe(winner.headers.get('x-request-id'));
  expect(await replay.text()).toBe(await winner.text());
});

test('a retry after the first process crashed runs anew; the crashed request is closed unbilled (billed once)', async () => {
  const s = server.services;
  const idem = randomUUID();
  const b = body('crash');
  // What a process that died mid-call leaves: its claim on the key (its lease no longer renewed),
  // its hold, and its InferenceRequested without a completion.
  const dead = new IdempotencyStore(s.redis, s.ks, DAY_MS, 1, () => Date.now(), randomUUID);
  const crashedId = randomUUID();
  const claim = await dead.claim(dead.key(key.keyId, idem), requestHash('POST', INFER, {}, b), crashedId);
  expect(claim.kind).toBe('claimed');
  const reserved = tokenCost({ inputNanoUsdPerToken: 2500n, outputNanoUsdPerToken: 10000n }, 20, 30);
  expect((await new Reservations(s.redis, s.ks).reserve(key.workspaceId, crashedId, reserved, Date.now())).ok).toBe(true);
  const e = requested(
    {
      requestId: crashedId,
      workspaceId: key.workspaceId,
      keyId: key.keyId,
      config: 'service_3_pi',
      endpoint: 'inference',
      promptTokens: 20,
      maxTokens: 30,
      webSearch: false,
    },
    reserved,
  );
  await s.store.append(streams.inference(crashedId), [{ id: randomUUID(), ...e }], { expectedRevision: 'no_stream' });
  await settle(s);
  const balance = await balanceOf(s, key.workspaceId);

  const retry = await post(INFER, b, idem);
  expect(retry.status).toBe(200);
  expect(retry.headers.get('idempotent-replayed')).toBeNull();
  const newId = retry.headers.get('x-request-id')!;
  expect(newId).not.toBe(crashedId);

  const crashed = await inferenceEvents(s, crashedId);
  expect((crashed[1].data as InferenceCompleted['data']).finishReason).toBe('superseded');
  expect((crashed[2].data as TokensDebited['data']).amountNanoUsd).toBe('0');
  await settle(s);
  const cost = BigInt((await debitsOf(newId))[0].amountNanoUsd);
  expect(balance - (await balanceOf(s, key.workspaceId))).toBe(cost);
  // And the retry's own reply is what later retries get.
  expect((await post(INFER, b, idem)).headers.get('idempotent-replayed')).toBe('true');
});

test('after the window (24 h by default) the same key is a new call', async () => {
  const s = server.services;
  const realNow = s.now;
  const idem = randomUUID();
  const first = await post(INFER, body('window'), idem);
  try {
    s.now = () => new Date(realNow().getTime() + DAY_MS - 60_000);
    expect((await post(INFER, body('window'), idem)).headers.get('idempotent-replayed')).toBe('true');
    s.now = () => new Date(realNow().getTime() + DAY_MS + 1000);
    const later = await post(INFER, body('window'), idem);
    expect(later.status).toBe(200);
    expect(later.headers.get('idempotent-replayed')).toBeNull();
    expect(later.headers.get('x-request-id')).not.toBe(first.headers.get('x-request-id'));
    expect(await debitsOf(later.headers.get('x-request-id')!)).toHaveLength(1);
  } finally {
    s.now = realNow;
  }
});

test.each([
  ['over-long', 'k'.repeat(256), /at most 255/],
  ['with a space', 'my key', /visible ASCII/],
  ['empty', '', /visible ASCII/],
])('a key %s is 422 naming the header, and nothing is generated', async (_what, idem, msg) => {
  const calls = backend.calls.length;
  const res = await post(INFER, body(), idem);
  expect(res.status).toBe(422);
  const detail = ((await res.json()) as { detail: Array<{ loc: string[]; msg: string }> }).detail;
  expect(detail[0].loc).toEqual(['header', 'Idempotency-Key']);
  expect(detail[0].msg).toMatch(msg);
  expect(backend.calls.length).toBe(calls);
});

test('a call that failed frees its key: the corrected retry runs', async () => {
  const idem = randomUUID();
  const bad = await post(INFER, { ...body('free'), max_tokens: 10_000_000 }, idem);
  expect(bad.status).toBe(422);
  // Had the failure been recorded, this other body would be refused (422) or wait (409).
  const fixed = await post(INFER, body('free'), idem);
  expect(fixed.status).toBe(200);
  expect(fixed.headers.get('idempotent-replayed')).toBeNull();
});
