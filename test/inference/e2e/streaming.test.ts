import { createParser, EventSourceMessage } from 'eventsource-parser';
import type { BackendFinish, GenerateParams, ModelBackend } from '../../../src/inference/backend';
import { countTokens } from '../../../src/inference/tokenizer';
import type { TestServer } from '../../support/harness';
import { authHeaders, balanceOf, inferenceEvents, seedFundedKey, SeededKey, settle } from '../int/support/seed';
import { fundedServerFixture, ScriptedBackend, startInferenceServer } from '../int/support/server';

const INFER = '/external/api/inference';
const STREAM = '/external/api/inference/streaming';

interface Chunk {
  created: number;
  idx: number;
  index: number;
  text: string;
}

/** Reads an event stream with a standard SSE parser (eventsource-parser), as real clients do. */
async function readStream(res: Response): Promise<{ chunks: Chunk[]; errors: EventSourceMessage[] }> {
  const chunks: Chunk[] = [];
  const errors: EventSourceMessage[] = [];
  const parser = createParser({
    onEvent(e) {
      if (e.event === 'error') errors.push(e);
      else chunks.push(JSON.parse(e.data) as Chunk);
    },
  });
  const decoder = new TextDecoder();
  for await (const part of res.body as unknown as AsyncIterable<Uint8Array>) parser.feed(decoder.decode(part, { stream: true }));
  return { chunks, errors };
}

describe('with the demo model', () => {
  const t = fundedServerFixture();

  const cases = [
    { config: 'service_3_pi', seed: 1 },
    { config: 'service_3_pi', seed: 42, temperature: 0.7, top_p: 0.9 },
    { config: 'service_3_productivity', seed: 7 },
    { config: 'service_3_pi', seed: 3, temperature: 0 },
    { config: 'service_3_pi', seed: 11, max_tokens: 9 },
    { config: 'service_3_productivity', seed: 5, stop_tokens: ['.', '\n'] },
    { config: 'service_3_pi', seed: 8, stop_tokens: ['you', '!'], max_tokens: 40 },
  ];

  test.each(cases)('the streamed texts concatenate to the non-streamed text for the same seed: %j', async (c) => {
    const body = {
      context: [
        { type: 'Instruction', text: 'Be kind.' },
        { type: 'Human', text: 'I finally finished my project today! 🎉', ts: 1735689600 },
      ],
      metadata: { user_firstname: 'Sam', user_timezone: 'Asia/Tokyo' },
      ...c,
    };
    const plain = await t.post(INFER, body);
    expect(plain.status).toBe(200);
    const { text, created } = (await plain.json()) as { text: string; created: number };
    expect(typeof created).toBe('number');
    expect(text.length).toBeGreaterThan(0);

    const streamed = await t.post(STREAM, body);
    expect(streamed.status).toBe(200);
    expect(streamed.headers.get('content-type')).toMatch(/^text\/event-stream/);
    expect(streamed.headers.get('x-request-id')).toBeTruthy();
    expect(streamed.headers.get('x-ratelimit-remaining-requests')).toBeTruthy();
    const { chunks, errors } = await readStream(streamed);
    expect(errors).toEqual([]);
    expect(chunks.map((ch) => ch.text).join('')).toBe(text);
    chunks.forEach((ch, i) => {
      expect(ch.idx).toBe(i);
      expect(ch.index).toBe(i);
      expect(typeof ch.created).toBe('number');
    });
    if ('stop_tokens' in c) for (const s of c.stop_tokens as string[]) expect(text).not.toContain(s);
    if ('max_tokens' in c) expect(countTokens(text)).toBeLessThanOrEqual(c.max_tokens as number);
  });

  test('the wire format: one `data: {json}` line and a blank line per chunk', async () => {
    const res = await t.post(STREAM, { context: [{ type: 'Human', text: 'hello' }], config: 'service_3_pi', seed: 2, max_tokens: 12 });
    const wire = await res.text();
    expect(wire).toMatch(/^(data: \{"created":\d+(\.\d+)?,"idx":\d+,"index":\d+,"text":"[^\n]*"\}\n\n)+$/);
  });
});

/** Yields `before` chunks, then waits until the caller is gone, then would yield more. */
class GateBackend implements ModelBackend {
  readonly kind = 'gate';
  /** Resolves when a request has yielded every `before` chunk and waits for its caller to leave. */
  private parkedNow: () => void = () => undefined;
  constructor(private readonly before: string[]) {}
  nextParked(): Promise<void> {
    return new Promise((resolve) => (this.parkedNow = resolve));
  }
  modelName() {
    return 'gate';
  }
  async *generate(p: GenerateParams): AsyncGenerator<string, BackendFinish, undefined> {
    for (const c of this.before) yield c;
    this.parkedNow();
    await new Promise<void>((resolve) => {
      if (p.signal.aborted) resolve();
      p.signal.addEventListener('abort', () => resolve(), { once: true });
    });
    yield ' never sent';
    yield ' nor this';
    return 'stop';
  }
}

describe('a caller who disconnects mid-stream', () => {
  const before = ['Once', ' upon', ' a', ' time', ',', ' a', ' 🦊', ' lived'];
  let server: TestServer;
  const gate = new GateBackend(before);
  beforeAll(async () => {
    server = await startInferenceServer({}, { backend: gate });
  });
  afterAll(() => server.close());

  async function completion(requestId: string) {
    // A deadline, not a count of polls: a loaded machine takes longer, a broken one never gets there.
    const deadline = Date.now() + 15_000;
    while (Date.now() < deadline) {
      const events = await inferenceEvents(server.services, requestId);
      if (events.length === 3) return events;
      await new Promise((r) => setTimeout(r, 25));
    }
    throw new Error('the request was never completed');
  }

  test.each([STREAM, '/external/api/inference/openai/v1/chat/completions'])('%s: is billed exactly what was generated', async (path) => {
    const key = await seedFundedKey(server.services, { usd: '1' });
    const ac = new AbortController();
    const body =
      path === STREAM
        ? { context: [{ type: 'Human', text: 'Tell me a story' }], config: 'service_3_pi', max_tokens: 100 }
        : { model: 'service_3_pi', messages: [{ role: 'user', content: 'Tell me a story' }], max_tokens: 100, stream: true };
    const res = await fetch(server.url + path, {
      method: 'POST',
      headers: authHeaders(key.secret),
      body: JSON.stringify(body),
      signal: ac.signal,
    });
    const requestId = res.headers.get('x-request-id')!;
    let received = '';
    const parser = createParser({
      onEvent(e) {
        const d = JSON.parse(e.data);
        received += path === STREAM ? d.text : (d.choices[0].delta.content ?? '');
      },
    });
    const decoder = new TextDecoder();
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    while (received !== before.join('')) {
      const { value, done } = await reader.read();
      if (done) throw new Error('stream ended early');
      parser.feed(decoder.decode(value, { stream: true }));
    }
    ac.abort();

    const events = await completion(requestId);
    const done = events[1].data as { finishReason: string; outputTokens: number; inputTokens: number };
    const debit = events[2].data as { outputTokens: number; amountNanoUsd: string; inputTokens: number };
    expect(done.finishReason).toBe('client_disconnected');
    expect(done.outputTokens).toBe(countTokens(received));
    expect(debit.outputTokens).toBe(countTokens(received));
    expect(BigInt(debit.amountNanoUsd)).toBe(BigInt(debit.inputTokens) * 2500n + BigInt(debit.outputTokens) * 10000n);
    await settle(server.services);
    expect(await balanceOf(server.services, key.workspaceId)).toBe(1_000_000_000n - BigInt(debit.amountNanoUsd));
  });

  test('non-streaming: a caller who leaves before the reply is billed the prompt only (it received nothing)', async () => {
    const key = await seedFundedKey(server.services, { usd: '1' });
    const ac = new AbortController();
    const parked = gate.nextParked();
    const res = fetch(server.url + INFER, {
      method: 'POST',
      headers: authHeaders(key.secret),
      body: JSON.stringify({ context: [{ type: 'Human', text: 'Tell me a story' }], config: 'service_3_pi' }),
      signal: ac.signal,
    }).catch(() => null);
    // Leave once the backend has generated every `before` chunk (a fixed 150 ms could end before
    // the request even reached the backend on a loaded machine).
    await parked;
    ac.abort();
    await res;
    // The request id never reached the caller: find the request through the store.
    let completed;
    for (const deadline = Date.now() + 15_000; Date.now() < deadline && !completed;) {
      const all = await server.services.store.readAll();
      completed = all.find((e) => e.type === 'InferenceCompleted' && (e.data as { workspaceId: string }).workspaceId === key.workspaceId);
      if (!completed) await new Promise((r) => setTimeout(r, 25));
    }
    expect(completed?.data).toMatchObject({ finishReason: 'client_disconnected', outputTokens: 0 });
    const debit = (await server.services.store.readAll()).find(
      (e) => e.type === 'TokensDebited' && (e.data as { workspaceId: string }).workspaceId === key.workspaceId,
    );
    expect(debit?.data).toMatchObject({ outputTokens: 0 });
    expect((debit?.data as { inputTokens: number }).inputTokens).toBeGreaterThan(0);
  });
});

describe('a backend that ignores max_tokens and stop', () => {
  const story = 'The fox ran across the hill and over the bridge, past the mill, where the river bends. '.repeat(80);
  let server: TestServer;
  let key: SeededKey;
  beforeAll(async () => {
    // Odd chunk sizes, so token boundaries and chunk boundaries never line up.
    const backend = new ScriptedBackend(() => ({ chunks: story.match(/[\s\S]{1,7}/g)! }));
    server = await startInferenceServer({}, { backend });
    key = await seedFundedKey(server.services, { usd: '10' });
  });
  afterAll(() => server.close());

  test.each([1, 17, 256, 1024])('max_tokens %i: exactly that many tokens returned, streamed and billed', async (max) => {
    const body = { context: [{ type: 'Human', text: 'Tell me everything.' }], config: 'service_3_pi', max_tokens: max };
    const plain = await fetch(server.url + INFER, { method: 'POST', headers: authHeaders(key.secret), body: JSON.stringify(body) });
    const { text } = (await plain.json()) as { text: string };
    expect(countTokens(text)).toBe(max);
    expect(story.startsWith(text)).toBe(true);
    const events = await inferenceEvents(server.services, plain.headers.get('x-request-id')!);
    expect(events[1].data).toMatchObject({ finishReason: 'length', outputTokens: max });
    expect(events[2].data).toMatchObject({ outputTokens: max });

    const streamed = await fetch(server.url + STREAM, { method: 'POST', headers: authHeaders(key.secret), body: JSON.stringify(body) });
    const { chunks } = await readStream(streamed);
    expect(chunks.map((c) => c.text).join('')).toBe(text);
  });

  test('a stop string split across chunks stops the reply and is not sent', async () => {
    const body = { context: [{ type: 'Human', text: 'Go' }], config: 'service_3_pi', stop_tokens: ['the river'] };
    const streamed = await fetch(server.url + STREAM, { method: 'POST', headers: authHeaders(key.secret), body: JSON.stringify(body) });
    const { chunks } = await readStream(streamed);
    const text = chunks.map((c) => c.text).join('');
    expect(text).toBe(story.slice(0, story.indexOf('the river')));
    expect(chunks.some((c) => c.text.includes('the'))).toBe(true);
    const events = await inferenceEvents(server.services, streamed.headers.get('x-request-id')!);
    expect(events[1].data).toMatchObject({ finishReason: 'stop', outputTokens: countTokens(text) });
  });
});

describe('with a slow demo model', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startInferenceServer({ DEMO_TOKEN_DELAY_MS: '20' });
  });
  afterAll(() => server.close());

  test('a disconnect stops generation at once and bills the tokens generated up to then', async () => {
    const key = await seedFundedKey(server.services, { usd: '1' });
    const ac = new AbortController();
    const res = await fetch(server.url + STREAM, {
      method: 'POST',
      headers: authHeaders(key.secret),
      body: JSON.stringify({ context: [{ type: 'Human', text: 'Talk to me' }], config: 'service_3_pi', temperature: 0, max_tokens: 1000 }),
      signal: ac.signal,
    });
    const requestId = res.headers.get('x-request-id')!;
    let received = '';
    let n = 0;
    const parser = createParser({
      onEvent(e) {
        received += JSON.parse(e.data).text;
        n++;
      },
    });
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    const decoder = new TextDecoder();
    while (n < 10) parser.feed(decoder.decode((await reader.read()).value, { stream: true }));
    ac.abort();
    let events = await inferenceEvents(server.services, requestId);
    for (const deadline = Date.now() + 15_000; Date.now() < deadline && events.length < 3;) {
      await new Promise((r) => setTimeout(r, 25));
      events = await inferenceEvents(server.services, requestId);
    }
    const done = events[1].data as { finishReason: string; outputTokens: number; durationMs: number };
    expect(done.finishReason).toBe('client_disconnected');
    // At 20 ms a token the server notices the hang-up within a token or two of what we read.
    expect(done.outputTokens).toBeGreaterThanOrEqual(countTokens(received));
    expect(done.outputTokens).toBeLessThanOrEqual(countTokens(received) + 3);
    // Far below the ~20 s that 1000 tokens at 20 ms take; wide enough for event-loop stalls under load.
    expect(done.durationMs).toBeLessThan(10_000);
  });
});
