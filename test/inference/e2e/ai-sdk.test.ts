import { randomUUID } from 'node:crypto';
import { createOpenAI } from '@ai-sdk/openai';
import { generateText, streamText } from 'ai';
import type { TokensDebited } from '../../../src/inference/events';
import { inferenceEvents } from '../int/support/seed';
import { fundedServerFixture } from '../int/support/server';

/**
 * The AI SDK (`ai` + `@ai-sdk/openai`), unmodified but for the base URL: its default
 * `openai(model)` calls the Responses API, `openai.chat(model)` chat completions. Both are
 * metered like any call, and an Idempotency-Key passes as a per-call header.
 */

const t = fundedServerFixture();
const provider = () => createOpenAI({ apiKey: t.key.secret, baseURL: `${t.server.url}/external/api/inference/openai/v1` });

const debitsOf = async (requestId: string) =>
  (await inferenceEvents(t.server.services, requestId))
    .filter((e) => e.type === 'TokensDebited')
    .map((e) => e.data as TokensDebited['data']);

test('generateText with the default provider (the Responses API): text, usage and finish reason as billed', async () => {
  const r = await generateText({
    model: provider()('service_3_pi'),
    system: 'Keep it short.',
    prompt: 'Three tips for a calm morning?',
    maxOutputTokens: 30,
    maxRetries: 0,
  });
  const requestId = r.response.headers!['x-request-id']!;
  expect(r.response.id).toBe(`resp_${requestId}`);
  expect(r.text.length).toBeGreaterThan(0);
  const [debit] = await debitsOf(requestId);
  expect([r.usage.inputTokens, r.usage.outputTokens]).toEqual([debit!.inputTokens, debit!.outputTokens]);
  expect(['stop', 'length']).toContain(r.finishReason);
});

test('streamText with the default provider: the deltas make the whole text; usage as billed', async () => {
  const s = streamText({ model: provider()('service_3_productivity'), prompt: 'List three primes.', maxOutputTokens: 40, maxRetries: 0 });
  let text = '';
  for await (const piece of s.textStream) text += piece;
  expect(text).toBe(await s.text);
  expect(text.length).toBeGreaterThan(0);
  const response = await s.response;
  const [debit] = await debitsOf(response.id.slice('resp_'.length));
  const usage = await s.usage;
  expect([usage.inputTokens, usage.outputTokens]).toEqual([debit!.inputTokens, debit!.outputTokens]);
});

test('an Idempotency-Key as a per-call header: the retry is replayed and billed once; openai.chat() works too', async () => {
  const key = randomUUID();
  const call = () =>
    generateText({
      model: provider()('service_3_pi'),
      prompt: 'Say something kind.',
      maxOutputTokens: 20,
      headers: { 'Idempotency-Key': key },
      maxRetries: 0,
    });
  const first = await call();
  const again = await call();
  expect(again.response.headers!['idempotent-replayed']).toBe('true');
  expect(again.text).toBe(first.text);
  expect(again.response.headers!['x-request-id']).toBe(first.response.headers!['x-request-id']);
  expect(await debitsOf(first.response.headers!['x-request-id']!)).toHaveLength(1);

  const chat = await generateText({ model: provider().chat('service_3_pi'), prompt: 'Hello!', maxOutputTokens: 20, maxRetries: 0 });
  expect(chat.response.id).toBe(`chatcmpl-${chat.response.headers!['x-request-id']}`);
  expect(await debitsOf(chat.response.headers!['x-request-id']!)).toHaveLength(1);
});
