import { createParser } from 'eventsource-parser';
import { countTokens } from '../../../src/inference/tokenizer';
import { OpenAiUpstream, startOpenAiUpstream } from '../../support/openai-upstream/server';
import type { TestServer } from '../../support/harness';
import { authHeaders, inferenceEvents, seedFundedKey } from './support/seed';
import { startInferenceServer } from './support/server';

/**
 * The zero-charge rule of docs/USAGE-POLICY.md ("What a call costs"), one case each, end to end:
 * the service over a local OpenAI-compatible upstream scripted per case, and the request's own
 * events in the store. Each debit must equal the rule: amount = input × input price + output ×
 * output price, with input and output as the rule says.
 */
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

interface Billed {
  finishReason: string;
  promptTokens: number;
  inputTokens: number;
  outputTokens: number;
  amount: bigint;
}

/** The request's facts from the store, waiting for its completion to be written. */
async function billed(requestId: string): Promise<Billed> {
  let events = await inferenceEvents(server.services, requestId);
  for (let i = 0; i < 200 && events.length < 3; i++) {
    await new Promise((r) => setTimeout(r, 25));
    events = await inferenceEvents(server.services, requestId);
  }
  const [req, done, debit] = events.map((e) => e.data as Record<string, unknown>);
  const cfg = server.services.config;
  const input = debit.inputTokens as number;
  const output = debit.outputTokens as number;
  // The debit is exactly its tokens at the configured prices.
  expect(BigInt(debit.amountNanoUsd as string)).toBe(
    BigInt(input) * BigInt(cfg.PRICE_INPUT_NANO_USD_PER_TOKEN) + BigInt(output) * BigInt(cfg.PRICE_OUTPUT_NANO_USD_PER_TOKEN),
  );
  return {
    finishReason: done.finishReason as string,
    promptTokens: req.promptTokens as number,
    inputTokens: input,
    outputTokens: output,
    amount: BigInt(debit.amountNanoUsd as string),
  };
}

const body = (extra: Record<string, unknown> = {}) =>
  JSON.stringify({ context: [{ type: 'Human', text: 'Tell me something' }], config: 'service_3_pi', ...extra });

async function streamed(secret: string, extra: Record<string, unknown> = {}) {
  const res = await fetch(`${server.url}/external/api/inference/streaming`, {
    method: 'POST',
    headers: authHeaders(secret),
    body: body(extra),
  });
  const texts: string[] = [];
  const parser = createParser({
    onEvent: (e) => {
      const d = JSON.parse(e.data) as { text?: string };
      if (typeof d.text === 'string') texts.push(d.text);
    },
  });
  parser.feed(await res.text());
  return { requestId: res.headers.get('x-request-id')!, text: texts.join('') };
}

test('the upstream fails before the first token: nothing is charged', async () => {
  upstream.behave = () => ({ chunks: [], status: 500 });
  const key = await seedFundedKey(server.services);
  const res = await fetch(`${server.url}/external/api/inference`, { method: 'POST', headers: authHeaders(key.secret), body: body() });
  expect(res.status).toBe(502);
  const b = await billed(res.headers.get('x-request-id')!);
  expect(b).toMatchObject({ finishReason: 'upstream_error', inputTokens: 0, outputTokens: 0, amount: 0n });
});

test('the upstream is cut mid-stream: the prompt and the tokens sent', async () => {
  upstream.behave = () => ({ chunks: [' one', ' two', ' three', ' four', ' five'], failAfter: 2 });
  const key = await seedFundedKey(server.services);
  const { requestId, text } = await streamed(key.secret);
  expect(text).toBe(' one two');
  const b = await billed(requestId);
  expect(b).toMatchObject({ finishReason: 'upstream_error', inputTokens: b.promptTokens, outputTokens: countTokens(text) });
  expect(b.outputTokens).toBeGreaterThan(0);
});

test('an empty completion: nothing is charged, not even the prompt', async () => {
  upstream.behave = () => ({ chunks: [] });
  const key = await seedFundedKey(server.services);
  const res = await fetch(`${server.url}/external/api/inference`, { method: 'POST', headers: authHeaders(key.secret), body: body() });
  expect(res.status).toBe(200);
  const b = await billed(res.headers.get('x-request-id')!);
  expect(b).toMatchObject({ finishReason: 'stop', inputTokens: 0, outputTokens: 0, amount: 0n });
});

test('the caller disconnects mid-stream: the prompt and the tokens generated up to then', async () => {
  upstream.behave = () => ({ chunks: Array.from({ length: 300 }, (_, i) => ` token${i}`), delayMs: 10 });
  const key = await seedFundedKey(server.services);
  const ac = new AbortController();
  const disconnected = upstream.nextDisconnect();
  const res = await fetch(`${server.url}/external/api/inference/streaming`, {
    method: 'POST',
    headers: authHeaders(key.secret),
    body: body({ max_tokens: 1024 }),
    signal: ac.signal,
  });
  const reader = (res.body as ReadableStream<Uint8Array>).getReader();
  await reader.read();
  ac.abort();
  await disconnected;
  const b = await billed(res.headers.get('x-request-id')!);
  expect(b.finishReason).toBe('client_disconnected');
  expect(b.inputTokens).toBe(b.promptTokens);
  // Some tokens were generated, far fewer than the 300 words the upstream would have sent.
  expect(b.outputTokens).toBeGreaterThan(0);
  expect(b.outputTokens).toBeLessThan(countTokens(Array.from({ length: 300 }, (_, i) => ` token${i}`).join('')));
});

test('a non-streaming caller who leaves receives nothing and pays no output: the prompt only', async () => {
  upstream.behave = () => ({ chunks: Array.from({ length: 200 }, (_, i) => ` word${i}`), delayMs: 10 });
  const key = await seedFundedKey(server.services);
  const ac = new AbortController();
  const disconnected = upstream.nextDisconnect();
  const pending = fetch(`${server.url}/external/api/inference`, {
    method: 'POST',
    headers: authHeaders(key.secret),
    body: body({ max_tokens: 1024 }),
    signal: ac.signal,
  }).catch(() => null);
  // The request is recorded before the model runs: its id is in the store once the upstream was called.
  for (let i = 0; i < 200 && upstream.requests.length === 0; i++) await new Promise((r) => setTimeout(r, 10));
  await new Promise((r) => setTimeout(r, 50));
  ac.abort();
  await pending;
  await disconnected;
  const all = await server.services.store.readAll();
  const req = all.filter((e) => e.type === 'InferenceRequested' && (e.data as { keyId: string }).keyId === key.keyId).at(-1)!;
  const b = await billed((req.data as { requestId: string }).requestId);
  expect(b).toMatchObject({ finishReason: 'client_disconnected', inputTokens: b.promptTokens, outputTokens: 0 });
});

test('max_tokens or a stop string ends it: the prompt and the reply as delivered', async () => {
  upstream.behave = () => ({ chunks: Array.from({ length: 40 }, (_, i) => ` w${i}`) });
  const key = await seedFundedKey(server.services);
  const capped = await streamed(key.secret, { max_tokens: 5 });
  const b = await billed(capped.requestId);
  expect(b).toMatchObject({ finishReason: 'length', inputTokens: b.promptTokens, outputTokens: 5 });
  upstream.behave = () => ({ chunks: ['The answer', ' is 42.', ' STOP', ' and more'] });
  const stopped = await streamed(key.secret, { stop_tokens: ['STOP'] });
  expect(stopped.text).toBe('The answer is 42. ');
  const s = await billed(stopped.requestId);
  expect(s).toMatchObject({ finishReason: 'stop', inputTokens: s.promptTokens, outputTokens: countTokens(stopped.text) });
});
