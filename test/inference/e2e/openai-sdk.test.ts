import OpenAI, { APIError, AuthenticationError, RateLimitError } from 'openai';
import { countTokens } from '../../../src/inference/tokenizer';
import { inferenceEvents, seedFundedKey, seedKey } from '../int/support/seed';
import { fundedServerFixture } from '../int/support/server';

/** The official `openai` SDK against the compatible route, with only a base URL. */

const t = fundedServerFixture();
let client: OpenAI;
beforeAll(() => {
  client = new OpenAI({ apiKey: t.key.secret, baseURL: `${t.server.url}/external/api/inference/openai/v1`, maxRetries: 0 });
});

const messages = [
  { role: 'system' as const, content: 'You are helpful.' },
  { role: 'user' as const, content: 'Give me three tips for a calm morning 🙂' },
];

test('chat.completions.create: a chat.completion with usage that matches the ledger', async () => {
  const { data: completion, response } = await client.chat.completions
    .create({ model: 'service_3_pi', messages, max_tokens: 40, seed: 5 })
    .withResponse();
  expect(completion.object).toBe('chat.completion');
  expect(completion.model).toBe('service_3_pi');
  expect(completion.choices).toHaveLength(1);
  const choice = completion.choices[0];
  expect(choice.message.role).toBe('assistant');
  expect(typeof choice.message.content).toBe('string');
  expect(['stop', 'length']).toContain(choice.finish_reason);
  const usage = completion.usage!;
  expect(usage.completion_tokens).toBe(countTokens(choice.message.content!));
  expect(usage.total_tokens).toBe(usage.prompt_tokens + usage.completion_tokens);
  const requestId = response.headers.get('x-request-id')!;
  expect(completion.id).toBe(`chatcmpl-${requestId}`);
  const debit = (await inferenceEvents(t.server.services, requestId)).find((e) => e.type === 'TokensDebited')!.data as {
    inputTokens: number;
    outputTokens: number;
  };
  expect(debit).toMatchObject({ inputTokens: usage.prompt_tokens, outputTokens: usage.completion_tokens });
});

test('streaming: chunks concatenate to the non-streamed reply for the same seed; usage at the end; [DONE] ends it', async () => {
  const plain = await client.chat.completions.create({ model: 'service_3_productivity', messages, max_tokens: 60, seed: 9 });
  const stream = await client.chat.completions.create({
    model: 'service_3_productivity',
    messages,
    max_tokens: 60,
    seed: 9,
    stream: true,
    stream_options: { include_usage: true },
  });
  let text = '';
  let finish: string | null = null;
  let usage: OpenAI.CompletionUsage | null | undefined;
  let chunks = 0;
  for await (const chunk of stream) {
    chunks++;
    expect(chunk.object).toBe('chat.completion.chunk');
    const choice = chunk.choices[0];
    if (choice) {
      text += choice.delta.content ?? '';
      if (choice.finish_reason) finish = choice.finish_reason;
    }
    if (chunk.usage) usage = chunk.usage;
  }
  expect(chunks).toBeGreaterThan(2);
  expect(text).toBe(plain.choices[0].message.content);
  expect(finish).toBe(plain.choices[0].finish_reason);
  expect(usage).toEqual(plain.usage);
});

test('stop strings and max_tokens are honoured through the SDK', async () => {
  const r = await client.chat.completions.create({ model: 'service_3_pi', messages, max_tokens: 5, temperature: 0 });
  expect(r.usage!.completion_tokens).toBeLessThanOrEqual(5);
  const s = await client.chat.completions.create({ model: 'service_3_pi', messages, stop: [' ', '.'], seed: 1 });
  expect(s.choices[0].message.content).not.toMatch(/[ .]/);
});

test('models.list names the two configs', async () => {
  const models = [];
  for await (const m of client.models.list()) models.push(m.id);
  expect(models).toEqual(['service_3_pi', 'service_3_productivity']);
  expect((await client.models.retrieve('service_3_productivity')).id).toBe('service_3_productivity');
});

test('errors are proper APIErrors: 401, 402, 403, 422, 429', async () => {
  const bad = new OpenAI({ apiKey: 'tg_wrong', baseURL: client.baseURL, maxRetries: 0 });
  const e401 = await bad.chat.completions.create({ model: 'service_3_pi', messages }).catch((e) => e);
  expect(e401).toBeInstanceOf(AuthenticationError);
  expect(e401.status).toBe(401);
  expect(e401.message).toContain('Invalid API key');

  const poor = await seedKey(t.server.services);
  const e402 = await new OpenAI({ apiKey: poor.secret, baseURL: client.baseURL, maxRetries: 0 }).chat.completions
    .create({ model: 'service_3_pi', messages })
    .catch((e) => e);
  expect(e402).toBeInstanceOf(APIError);
  expect(e402.status).toBe(402);
  expect(e402.message).toContain('Insufficient balance');

  const noScope = await seedKey(t.server.services, { scopes: [] });
  const e403 = await new OpenAI({ apiKey: noScope.secret, baseURL: client.baseURL, maxRetries: 0 }).chat.completions
    .create({ model: 'service_3_pi', messages })
    .catch((e) => e);
  expect(e403.status).toBe(403);

  const e422 = await client.chat.completions.create({ model: 'service_3_pi', messages, temperature: 1.7 }).catch((e) => e);
  expect(e422).toBeInstanceOf(APIError);
  expect(e422.status).toBe(422);
  expect(e422.message).toContain('temperature');

  const limited = await seedFundedKey(t.server.services, { rateLimit: 1 });
  const c = new OpenAI({ apiKey: limited.secret, baseURL: client.baseURL, maxRetries: 0 });
  await c.chat.completions.create({ model: 'service_3_pi', messages, max_tokens: 2 });
  const e429 = await c.chat.completions.create({ model: 'service_3_pi', messages, max_tokens: 2 }).catch((e) => e);
  expect(e429).toBeInstanceOf(RateLimitError);
  expect(e429.headers.get('retry-after')).toBeTruthy();
});
