import { chatCompletionSchema, inferenceBodySchema } from '../../../src/inference/routes/schemas';
import { zodToDetail } from '../../../src/platform/http/middleware/errors';

const ok = { context: [{ type: 'Human', text: 'hi' }], config: 'service_3_pi' };

describe('the spec body', () => {
  test('defaults: temperature 1, top_p 0.95, max_tokens 256, web_search true, no stop strings', () => {
    expect(inferenceBodySchema.parse(ok)).toEqual({
      config: 'service_3_pi',
      context: [{ type: 'Human', text: 'hi' }],
      temperature: 1,
      topP: 0.95,
      maxTokens: 256,
      stop: [],
      webSearch: true,
      metadata: {},
    });
  });

  test('unknown fields are ignored; null means not given', () => {
    const r = inferenceBodySchema.parse({ ...ok, stream: true, model: 'x', tools: [], temperature: null, metadata: { foo: 1 } });
    expect(r.temperature).toBe(1);
    expect(r.metadata).toEqual({});
  });

  test('ts in seconds or milliseconds; the time zone canonicalized', () => {
    const r = inferenceBodySchema.parse({
      ...ok,
      context: [
        { type: 'Human', text: 'a', ts: 1735689600 },
        { type: 'AI', text: 'b', ts: 1735689600000 },
      ],
      metadata: { user_timezone: 'US/Eastern', user_firstname: 'Ada' },
    });
    expect(r.context.map((e) => e.tsMs)).toEqual([1735689600000, 1735689600000]);
    expect(r.metadata).toEqual({ user_timezone: 'America/New_York', user_firstname: 'Ada' });
  });

  test.each([
    [{ ...ok, config: 'gpt-4' }, ['body', 'config']],
    [{ ...ok, temperature: 1.5 }, ['body', 'temperature']],
    [{ ...ok, temperature: -0.1 }, ['body', 'temperature']],
    [{ ...ok, top_p: 2 }, ['body', 'top_p']],
    [{ ...ok, max_tokens: 0 }, ['body', 'max_tokens']],
    [{ ...ok, max_tokens: 1025 }, ['body', 'max_tokens']],
    [{ ...ok, max_tokens: 2.5 }, ['body', 'max_tokens']],
    [{ ...ok, max_tokens: '10' }, ['body', 'max_tokens']],
    [{ config: 'service_3_pi' }, ['body', 'context']],
    [{ ...ok, context: [] }, ['body', 'context']],
    [{ ...ok, context: [{ type: 'Robot', text: 'x' }] }, ['body', 'context', 0, 'type']],
    [{ ...ok, context: [{ type: 'Human' }] }, ['body', 'context', 0, 'text']],
    [{ ...ok, context: [{ type: 'Human', text: 'x', ts: -5 }] }, ['body', 'context', 0, 'ts']],
    [{ ...ok, stop_tokens: 'STOP' }, ['body', 'stop_tokens']],
    [{ ...ok, web_search: 'yes' }, ['body', 'web_search']],
    [{ ...ok, metadata: { user_timezone: 'Mars/Base' } }, ['body', 'metadata', 'user_timezone']],
    [{ ...ok, metadata: 'Ada' }, ['body', 'metadata']],
  ])('422 detail for %j at %j', (body, loc) => {
    const r = inferenceBodySchema.safeParse(body);
    expect(r.success).toBe(false);
    if (r.success) return;
    const detail = zodToDetail(r.error);
    expect(detail.map((d) => d.loc)).toContainEqual(loc);
    for (const d of detail) expect(typeof d.msg).toBe('string');
  });
});

describe('the OpenAI body', () => {
  test('roles map to entry types, the model picks the config, stop may be a string', () => {
    const r = chatCompletionSchema.parse({
      model: 'service_3_productivity',
      messages: [
        { role: 'system', content: 'Be brief.' },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'Hi ' },
            { type: 'text', text: 'there' },
          ],
        },
        { role: 'assistant', content: null },
      ],
      stop: 'END',
      max_completion_tokens: 12,
      stream: true,
      stream_options: { include_usage: true },
    });
    expect(r.request.config).toBe('service_3_productivity');
    expect(r.request.context).toEqual([
      { type: 'Instruction', text: 'Be brief.' },
      { type: 'Human', text: 'Hi there' },
      { type: 'AI', text: '' },
    ]);
    expect(r.request.stop).toEqual(['END']);
    expect(r.request.maxTokens).toBe(12);
    expect(r.stream).toBe(true);
    expect(r.includeUsage).toBe(true);
    expect(chatCompletionSchema.parse({ model: 'gpt-4o', messages: [{ role: 'user', content: 'x' }] }).request.config).toBe('service_3_pi');
  });

  test('refuses what it cannot serve', () => {
    for (const body of [
      { messages: [] },
      { messages: [{ role: 'tool', content: 'x' }] },
      { messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'x' } }] }] },
      { messages: [{ role: 'user', content: 'x' }], n: 2 },
      { messages: [{ role: 'user', content: 'x' }], temperature: 1.5 },
    ]) {
      expect(chatCompletionSchema.safeParse(body).success).toBe(false);
    }
  });
});
