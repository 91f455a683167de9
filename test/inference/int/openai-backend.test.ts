import { createParser } from 'eventsource-parser';
import { GenerateParams, UpstreamError } from '../../../src/inference/backend';
import { runGeneration } from '../../../src/inference/generate';
import { OpenAiBackend } from '../../../src/inference/openai/backend';
import { renderPrompt } from '../../../src/inference/prompt';
import { countTokens } from '../../../src/inference/tokenizer';
import { OpenAiUpstream, startOpenAiUpstream } from '../../support/openai-upstream/server';
import type { TestServer } from '../../support/harness';
import { authHeaders, inferenceEvents, seedFundedKey } from './support/seed';
import { startInferenceServer } from './support/server';

let pi: OpenAiUpstream;
let prod: OpenAiUpstream;
let backend: OpenAiBackend;
beforeAll(async () => {
  pi = await startOpenAiUpstream();
  prod = await startOpenAiUpstream();
  backend = new OpenAiBackend({
    service_3_pi: { baseUrl: pi.baseUrl, model: 'pi-model', apiKey: 'sk-pi' },
    service_3_productivity: { baseUrl: prod.baseUrl, model: 'prod-model' },
  });
});
afterAll(async () => {
  await pi.close();
  await prod.close();
});

const prompt = renderPrompt({
  config: 'service_3_pi',
  context: [
    { type: 'Instruction', text: 'Be brief.' },
    { type: 'Human', text: 'hello there friend' },
  ],
  metadata: {},
  now: new Date(0),
});
const params = (over: Partial<GenerateParams> = {}): GenerateParams => ({
  config: 'service_3_pi',
  prompt,
  temperature: 0.3,
  topP: 0.8,
  maxTokens: 77,
  stop: ['END', 'STOP'],
  seed: 1,
  requestSeed: 42,
  signal: new AbortController().signal,
  ...over,
});

async function collect(p: GenerateParams) {
  const out: string[] = [];
  const it = backend.generate(p);
  for (;;) {
    const step = await it.next();
    if (step.done) return { out, finish: step.value };
    out.push(step.value);
  }
}

test('streams the deltas; passes model, key, messages, temperature, top_p, max_tokens, stop and seed per config', async () => {
  const { out, finish } = await collect(params());
  expect(out.join('')).toBe('You said: hello there friend');
  expect(out.length).toBeGreaterThan(2);
  expect(finish).toBe('stop');
  const req = pi.requests.at(-1)!;
  expect(req.headers.authorization).toBe('Bearer sk-pi');
  expect(req.body).toMatchObject({
    model: 'pi-model',
    temperature: 0.3,
    top_p: 0.8,
    max_tokens: 77,
    stop: ['END', 'STOP'],
    seed: 42,
    stream: true,
    messages: prompt.messages,
  });

  await collect(params({ config: 'service_3_productivity' }));
  const other = prod.requests.at(-1)!;
  expect(other.body.model).toBe('prod-model');
  expect(other.headers.authorization).toBeUndefined();
});

test("the upstream's own length limit is reported", async () => {
  pi.behave = () => ({ chunks: ['a', 'b'], finishReason: 'length' });
  try {
    expect((await collect(params())).finish).toBe('length');
  } finally {
    pi.behave = (await import('../../support/openai-upstream/server')).echoBehaviour;
  }
});

describe('failures', () => {
  afterEach(async () => {
    pi.behave = (await import('../../support/openai-upstream/server')).echoBehaviour;
  });

  test('an HTTP error', async () => {
    pi.behave = () => ({ chunks: [], status: 503 });
    const err = await collect(params()).catch((e) => e);
    expect(err).toBeInstanceOf(UpstreamError);
    expect(err.status).toBe(503);
  });

  test('a connection broken mid-stream, after partial output', async () => {
    pi.behave = () => ({ chunks: ['one', ' two', ' three'], failAfter: 2 });
    const got: string[] = [];
    const err = await (async () => {
      for await (const t of backend.generate(params())) got.push(t);
    })().catch((e) => e);
    expect(got).toEqual(['one', ' two']);
    expect(err).toBeInstanceOf(UpstreamError);
  });

  test('an error event mid-stream', async () => {
    pi.behave = () => ({ chunks: ['one', ' two'], errorEventAfter: 1 });
    const err = await collect(params()).catch((e) => e);
    expect(err).toBeInstanceOf(UpstreamError);
    expect(err.message).toMatch(/scripted failure/);
  });

  test('an unreachable upstream', async () => {
    const nowhere = new OpenAiBackend({
      service_3_pi: { baseUrl: 'http://127.0.0.1:9/v1', model: 'x' },
      service_3_productivity: { baseUrl: 'http://127.0.0.1:9/v1', model: 'x' },
    });
    await expect(nowhere.generate(params()).next()).rejects.toBeInstanceOf(UpstreamError);
  });
});

test('cancels the upstream call when the caller disconnects', async () => {
  pi.behave = () => ({ chunks: Array.from({ length: 200 }, (_, i) => ` w${i}`), delayMs: 10 });
  try {
    const ac = new AbortController();
    const disconnected = pi.nextDisconnect();
    const before = pi.disconnects;
    let n = 0;
    const result = await runGeneration(backend, params({ stop: [] }), {
      signal: ac.signal,
      timeoutMs: 10_000,
      onText: () => {
        if (++n === 5) ac.abort();
      },
    });
    await disconnected;
    expect(pi.disconnects).toBe(before + 1);
    expect(result.finishReason).toBe('client_disconnected');
    expect(result.text).toBe(' w0 w1 w2 w3 w4');
  } finally {
    pi.behave = (await import('../../support/openai-upstream/server')).echoBehaviour;
  }
});

test('stopping early (stop string, max_tokens) also releases the upstream', async () => {
  pi.behave = () => ({ chunks: Array.from({ length: 200 }, (_, i) => ` w${i}`), delayMs: 5 });
  try {
    const disconnected = pi.nextDisconnect();
    const result = await runGeneration(backend, params({ stop: ['w7'], maxTokens: 1000 }), {
      signal: new AbortController().signal,
      timeoutMs: 10_000,
      onText: () => undefined,
    });
    await disconnected;
    expect(result.finishReason).toBe('stop');
    expect(result.text).toBe(' w0 w1 w2 w3 w4 w5 w6 ');
  } finally {
    pi.behave = (await import('../../support/openai-upstream/server')).echoBehaviour;
  }
});

describe('the service with MODEL_BACKEND=openai', () => {
  let server: TestServer;
  let upstream: OpenAiUpstream;
  beforeAll(async () => {
    upstream = await startOpenAiUpstream();
    server = await startInferenceServer({
      MODEL_BACKEND: 'openai',
      OPENAI_BASE_URL: upstream.baseUrl,
      OPENAI_API_KEY: 'sk-shared',
      OPENAI_MODEL_PI: 'upstream-pi',
      OPENAI_MODEL_PRODUCTIVITY: 'upstream-prod',
    });
  });
  afterAll(async () => {
    await server.close();
    await upstream.close();
  });

  test('our layer enforces a stop string split across upstream chunks, and bills what was sent', async () => {
    // The upstream ignores stop strings; our layer does not.
    upstream.behave = () => ({ chunks: ['The answer', ' is 4', '2. ST', 'OP', ' and more'] });
    const key = await seedFundedKey(server.services);
    const res = await fetch(`${server.url}/external/api/inference/streaming`, {
      method: 'POST',
      headers: authHeaders(key.secret),
      body: JSON.stringify({
        context: [{ type: 'Human', text: 'What is 6 x 7?' }],
        config: 'service_3_productivity',
        stop_tokens: ['STOP'],
      }),
    });
    const texts: string[] = [];
    const parser = createParser({ onEvent: (e) => texts.push(JSON.parse(e.data).text) });
    parser.feed(await res.text());
    expect(texts.join('')).toBe('The answer is 42. ');
    expect(texts.some((t) => t.includes('ST'))).toBe(false);
    expect(upstream.requests.at(-1)!.body).toMatchObject({ model: 'upstream-prod', stop: ['STOP'] });
    expect(upstream.requests.at(-1)!.headers.authorization).toBe('Bearer sk-shared');
    const events = await inferenceEvents(server.services, res.headers.get('x-request-id')!);
    expect(events[1].data).toMatchObject({ finishReason: 'stop', outputTokens: countTokens('The answer is 42. ') });
  });

  test('a caller who disconnects mid-stream cancels the upstream call', async () => {
    upstream.behave = () => ({ chunks: Array.from({ length: 300 }, (_, i) => ` token${i}`), delayMs: 10 });
    const key = await seedFundedKey(server.services);
    const ac = new AbortController();
    const disconnected = upstream.nextDisconnect();
    const res = await fetch(`${server.url}/external/api/inference/streaming`, {
      method: 'POST',
      headers: authHeaders(key.secret),
      body: JSON.stringify({ context: [{ type: 'Human', text: 'count' }], config: 'service_3_pi', max_tokens: 1024 }),
      signal: ac.signal,
    });
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    await reader.read();
    ac.abort();
    await disconnected; // the upstream saw its connection closed
    let events = await inferenceEvents(server.services, res.headers.get('x-request-id')!);
    for (let i = 0; i < 100 && events.length < 3; i++) {
      await new Promise((r) => setTimeout(r, 20));
      events = await inferenceEvents(server.services, res.headers.get('x-request-id')!);
    }
    expect(events[1].data).toMatchObject({ finishReason: 'client_disconnected' });
    expect(upstream.completed).toBe(1); // only the earlier, complete request
  });
});
