import { randomUUID } from 'node:crypto';
import OpenAI, { APIError, BadRequestError, RateLimitError, UnprocessableEntityError } from 'openai';
import type { InferenceRequested, TokensDebited } from '../../../src/inference/events';
import { inferenceEvents, seedFundedKey, seedKey } from '../int/support/seed';
import { fundedServerFixture, ScriptedBackend } from '../int/support/server';
import { eventually } from '../../support/wait';
import { countTokens } from '../../../src/inference/tokenizer';

/**
 * The Responses API (POST …/openai/v1/responses) through the official `openai` SDK's
 * `responses.create`, unmodified but for the base URL: metered, limited and idempotent like chat.
 */

const t = fundedServerFixture();
let client: OpenAI;
beforeAll(() => {
  client = new OpenAI({ apiKey: t.key.secret, baseURL: `${t.server.url}/external/api/inference/openai/v1`, maxRetries: 0 });
});

const debitOf = async (requestId: string) => {
  const events = await inferenceEvents(t.server.services, requestId);
  return {
    requested: events.find((e) => e.type === 'InferenceRequested')?.data as InferenceRequested['data'],
    debits: events.filter((e) => e.type === 'TokensDebited').map((e) => e.data as TokensDebited['data']),
  };
};

test('responses.create: output_text, instructions, and usage with the cost the ledger debited', async () => {
  const { data: r, response } = await client.responses
    .create({
      model: 'service_3_pi',
      instructions: 'Answer in one short sentence.',
      input: 'Three tips for a calm morning?',
      seed: 3,
    } as never)
    .withResponse();
  const requestId = response.headers.get('x-request-id')!;
  expect(r).toMatchObject({ id: `resp_${requestId}`, object: 'response', status: 'completed', model: 'service_3_pi', error: null });
  expect(r.instructions).toBe('Answer in one short sentence.');
  expect(r.output_text.length).toBeGreaterThan(0);
  expect(r.output).toEqual([
    {
      type: 'message',
      id: `msg_${requestId}`,
      status: 'completed',
      role: 'assistant',
      content: [{ type: 'output_text', text: r.output_text, annotations: [], logprobs: [] }],
    },
  ]);
  const { requested, debits } = await debitOf(requestId);
  expect(debits).toHaveLength(1);
  expect(r.usage).toEqual({
    input_tokens: debits[0]!.inputTokens,
    input_tokens_details: { cached_tokens: 0 },
    output_tokens: debits[0]!.outputTokens,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: debits[0]!.inputTokens + debits[0]!.outputTokens,
    cost: response.headers.get('x-usage-cost-usd'),
  });
  expect(requested.endpoint).toBe('openai');
  // The instructions are part of the billed prompt: the same input without them is shorter.
  const bare = await client.responses.create({ model: 'service_3_pi', input: 'Three tips for a calm morning?', seed: 3 } as never);
  expect(bare.usage!.input_tokens).toBeLessThan(r.usage!.input_tokens);
});

test('max_output_tokens stops the reply: status incomplete, reason max_output_tokens', async () => {
  const r = await client.responses.create({
    model: 'service_3_productivity',
    input: [{ role: 'user', content: [{ type: 'input_text', text: 'Write a long story about the sea.' }] }],
    max_output_tokens: 3,
    temperature: 0,
  });
  expect(r.usage!.output_tokens).toBeLessThanOrEqual(3);
  expect([r.status, r.incomplete_details]).toEqual(['incomplete', { reason: 'max_output_tokens' }]);
  expect(r.max_output_tokens).toBe(3);
});

test('streaming: the typed events in order, deltas that make the non-streamed text, usage in response.completed', async () => {
  const body = { model: 'service_3_productivity', input: 'List three primes.', max_output_tokens: 40, seed: 11 };
  const plain = await client.responses.create(body as never);
  const stream = await client.responses.create({ ...body, stream: true } as never);
  const types: string[] = [];
  let text = '';
  let last: OpenAI.Responses.Response | undefined;
  const seqs: number[] = [];
  for await (const e of stream as unknown as AsyncIterable<OpenAI.Responses.ResponseStreamEvent>) {
    types.push(e.type);
    seqs.push(e.sequence_number);
    if (e.type === 'response.output_text.delta') text += e.delta;
    if (e.type === 'response.completed' || e.type === 'response.incomplete') last = e.response;
  }
  const deltas = types.filter((x) => x === 'response.output_text.delta').length;
  expect(deltas).toBeGreaterThan(1);
  expect(types).toEqual([
    'response.created',
    'response.in_progress',
    'response.output_item.added',
    'response.content_part.added',
    ...Array(deltas).fill('response.output_text.delta'),
    'response.output_text.done',
    'response.content_part.done',
    'response.output_item.done',
    plain.status === 'completed' ? 'response.completed' : 'response.incomplete',
  ]);
  expect(seqs).toEqual(seqs.map((_, i) => i));
  expect(text).toBe(plain.output_text);
  expect(last!.output[0]).toMatchObject({ type: 'message', content: [{ type: 'output_text', text }] });
  const { debits } = await debitOf(last!.id.slice('resp_'.length));
  expect(last!.usage).toMatchObject({ input_tokens: debits[0]!.inputTokens, output_tokens: debits[0]!.outputTokens });
  expect(last!.usage).toEqual(plain.usage);
});

test('Idempotency-Key through the SDK (a header per request): the retry is replayed, marked, billed once', async () => {
  const key = randomUUID();
  const body = { model: 'service_3_pi', input: 'Say something kind.', max_output_tokens: 20 } as const;
  const first = await client.responses.create(body, { headers: { 'Idempotency-Key': key } }).withResponse();
  const again = await client.responses.create(body, { headers: { 'Idempotency-Key': key } }).withResponse();
  expect(again.response.headers.get('idempotent-replayed')).toBe('true');
  expect(again.data).toEqual(first.data);
  const { debits } = await debitOf(first.response.headers.get('x-request-id')!);
  expect(debits).toHaveLength(1);
  // The same key with another request: 422 naming the header.
  const other = await client.responses
    .create({ ...body, input: 'Another thing.' }, { headers: { 'Idempotency-Key': key } })
    .catch((e) => e);
  expect(other).toBeInstanceOf(UnprocessableEntityError);
  expect(other.message).toContain('Idempotency-Key');
  // A streamed call is replayed as a stream.
  const sKey = randomUUID();
  const collect = async () => {
    const s = await client.responses.create({ ...body, stream: true }, { headers: { 'Idempotency-Key': sKey } });
    const out: string[] = [];
    for await (const e of s) out.push(JSON.stringify(e));
    return out;
  };
  expect(await collect()).toEqual(await collect());
});

test('refusals: unsupported features 400, bad fields 422, no balance 402, rate limit 429, as SDK errors', async () => {
  for (const extra of [
    { tools: [{ type: 'function', name: 'f', parameters: {} }] },
    { previous_response_id: 'resp_123' },
    { text: { format: { type: 'json_object' } } },
    { background: true },
  ]) {
    const e = await client.responses.create({ model: 'service_3_pi', input: 'hi', ...extra } as never).catch((x) => x);
    expect(e).toBeInstanceOf(BadRequestError);
  }
  const image = await client.responses
    .create({
      model: 'service_3_pi',
      input: [{ role: 'user', content: [{ type: 'input_image', image_url: 'https://x/y.png', detail: 'auto' }] }],
    })
    .catch((x) => x);
  expect([image.status, image.message]).toEqual([400, expect.stringContaining('only text')]);
  const e422 = await client.responses.create({ model: 'service_3_pi', input: 'hi', temperature: 3 }).catch((x) => x);
  expect([e422.status, e422.message]).toEqual([422, expect.stringContaining('temperature')]);
  const empty = await client.responses.create({ model: 'service_3_pi', input: [] }).catch((x) => x);
  expect(empty.status).toBe(422);

  const poor = await seedKey(t.server.services);
  const e402 = await new OpenAI({ apiKey: poor.secret, baseURL: client.baseURL, maxRetries: 0 }).responses
    .create({ model: 'service_3_pi', input: 'hi' })
    .catch((x) => x);
  expect(e402).toBeInstanceOf(APIError);
  expect([e402.status, e402.message]).toEqual([402, expect.stringContaining('Insufficient balance')]);

  const limited = await seedFundedKey(t.server.services, { rateLimit: 1 });
  const c = new OpenAI({ apiKey: limited.secret, baseURL: client.baseURL, maxRetries: 0 });
  const ok = await c.responses.create({ model: 'service_3_pi', input: 'hi', max_output_tokens: 2 }).withResponse();
  expect(ok.response.headers.get('x-ratelimit-remaining-requests')).toBe('0');
  // The chat route and the responses route count against one limit.
  const e429 = await c.chat.completions
    .create({ model: 'service_3_pi', messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 })
    .catch((x) => x);
  expect(e429).toBeInstanceOf(RateLimitError);
  expect(e429.headers.get('retry-after')).toBeTruthy();
});

describe('a stream that fails after it started', () => {
  const backend = new ScriptedBackend(() => ({ chunks: ['Hel', 'lo', ' there'], failAfter: 2 }));
  const f = fundedServerFixture({}, { backend });
  test('ends with an error event the SDK raises as an APIError; the text sent is billed', async () => {
    const c = new OpenAI({ apiKey: f.key.secret, baseURL: `${f.server.url}/external/api/inference/openai/v1`, maxRetries: 0 });
    const { data: stream, response } = await c.responses.create({ model: 'service_3_pi', input: 'hi', stream: true }).withResponse();
    const seen: string[] = [];
    const err = await (async () => {
      for await (const e of stream) seen.push(e.type);
    })().catch((x) => x);
    expect(err).toBeInstanceOf(APIError);
    expect(err.message).toContain('upstream');
    expect(seen.filter((x) => x === 'response.output_text.delta')).toHaveLength(2);
    expect(seen).not.toContain('response.completed');
    const events = await eventually(
      () => inferenceEvents(f.server.services, response.headers.get('x-request-id')!),
      (es) => es.some((e) => e.type === 'TokensDebited'),
    );
    const debit = events.find((e) => e.type === 'TokensDebited')!.data as TokensDebited['data'];
    expect([debit.outputTokens, debit.inputTokens > 0]).toEqual([countTokens('Hello'), true]);
  });
});
