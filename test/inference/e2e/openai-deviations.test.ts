import OpenAI, { BadRequestError } from 'openai';
import { fundedServerFixture } from '../int/support/server';

/** What real clients found: usage only when asked, and features we lack refused up front. */

const t = fundedServerFixture();
let client: OpenAI;
beforeAll(() => {
  client = new OpenAI({ apiKey: t.key.secret, baseURL: `${t.server.url}/external/api/inference/openai/v1`, maxRetries: 0 });
});

const messages = [{ role: 'user' as const, content: 'Say something short' }];

async function collect(includeUsage: boolean | null) {
  const stream = await client.chat.completions.create({
    model: 'service_3_pi',
    messages,
    max_tokens: 8,
    stream: true,
    ...(includeUsage === null ? {} : { stream_options: { include_usage: includeUsage } }),
  });
  const chunks: OpenAI.ChatCompletionChunk[] = [];
  for await (const c of stream) chunks.push(c);
  return chunks;
}

describe('streamed usage', () => {
  test('without stream_options.include_usage no chunk carries usage', async () => {
    for (const flag of [null, false]) {
      const chunks = await collect(flag);
      expect(chunks.length).toBeGreaterThan(1);
      expect(chunks.filter((c) => 'usage' in c && c.usage != null)).toEqual([]);
      expect(chunks.at(-1)!.choices[0].finish_reason).not.toBeNull();
    }
  });

  test('with include_usage it comes once, in a last chunk with no choices', async () => {
    const chunks = await collect(true);
    const withUsage = chunks.filter((c) => c.usage != null);
    expect(withUsage).toHaveLength(1);
    expect(chunks.at(-1)).toBe(withUsage[0]);
    expect(withUsage[0].choices).toEqual([]);
    expect(withUsage[0].usage!.total_tokens).toBe(withUsage[0].usage!.prompt_tokens + withUsage[0].usage!.completion_tokens);
    expect(chunks.at(-2)!.choices[0].finish_reason).not.toBeNull();
  });
});

describe('features the service does not offer are refused with 400 naming them', () => {
  const tool = { type: 'function' as const, function: { name: 'get_weather', parameters: { type: 'object', properties: {} } } };
  const refused = async (extra: Record<string, unknown>, content: OpenAI.ChatCompletionMessageParam[] = messages) => {
    const head = await t.server.services.store.headPosition();
    const err = await client.chat.completions.create({ model: 'service_3_pi', messages: content, ...extra } as never).catch((e) => e);
    expect(err).toBeInstanceOf(BadRequestError);
    expect(err.status).toBe(400);
    // Nothing was reserved or recorded for a refused request.
    expect(await t.server.services.store.headPosition()).toBe(head);
    return err.message as string;
  };

  test('tools and tool_choice', async () => {
    expect(await refused({ tools: [tool] })).toMatch(/tools are not supported/);
    expect(await refused({ tool_choice: 'required' })).toMatch(/tool_choice" may only be "none" or "auto"/);
    expect(await refused({ tool_choice: { type: 'function', function: { name: 'x' } } })).toMatch(/tools are not supported/);
    expect(await refused({ functions: [{ name: 'f', parameters: {} }] })).toMatch(/tools are not supported/);
    // An empty list and the harmless choices are fine.
    const ok = await client.chat.completions.create({
      model: 'service_3_pi',
      messages,
      max_tokens: 3,
      tools: [],
      tool_choice: 'none',
    } as never);
    expect((ok as OpenAI.ChatCompletion).choices[0].message.role).toBe('assistant');
  });

  test('response_format other than text', async () => {
    const schema = { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'object' } } };
    expect(await refused({ response_format: schema })).toMatch(/response_format "json_schema" is not supported/);
    expect(await refused({ response_format: { type: 'json_object' } })).toMatch(/response_format "json_object" is not supported/);
    const ok = await client.chat.completions.create({ model: 'service_3_pi', messages, max_tokens: 3, response_format: { type: 'text' } });
    expect(ok.choices).toHaveLength(1);
  });

  test('image parts: only text parts are supported', async () => {
    const msg = await refused({}, [
      {
        role: 'user',
        content: [
          { type: 'text', text: 'What is this?' },
          { type: 'image_url', image_url: { url: 'https://example.com/a.png' } },
        ],
      },
    ]);
    expect(msg).toMatch(/only text content parts are supported: this service reads text only \(got a "image_url" part\)/);
  });
});
