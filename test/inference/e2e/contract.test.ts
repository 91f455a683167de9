/**
 * Real answers of every inference route against their documented response schemas (the same
 * contracts the OpenAPI document is built from): no undocumented status, media type or field.
 */
import { chatCompletions, getModel, inference, listModels, streaming } from '../../../src/inference/routes/schemas';
import { MODEL_CONFIGS } from '../../../src/inference/models';
import { expectMatchesContract } from '../../support/contract';
import { authHeaders } from '../int/support/seed';
import { fundedServerFixture, ScriptedBackend } from '../int/support/server';

const backend = new ScriptedBackend(() => ({ chunks: ['Hi', ' there', '!'] }));
const t = fundedServerFixture({}, { backend });

const spec = { context: [{ type: 'Human', text: 'Hello there' }], config: 'service_3_productivity', max_tokens: 20 };
const chat = { model: 'service_3_pi', messages: [{ role: 'user', content: 'Hello there' }], max_tokens: 20 };
const call = (path: string, body?: unknown) =>
  fetch(t.server.url + path, {
    method: body ? 'POST' : 'GET',
    headers: authHeaders(t.key.secret),
    ...(body ? { body: JSON.stringify(body) } : {}),
  });

test('the spec routes: the whole reply, and the stream of chunks', async () => {
  expect(await expectMatchesContract(await call(inference.path, spec), inference)).toEqual({
    created: expect.any(Number),
    text: 'Hi there!',
  });
  const chunks = (await expectMatchesContract(await call(streaming.path, spec), streaming)) as Array<{ text: string }>;
  expect(chunks.map((c) => c.text).join('')).toBe('Hi there!');
});

test('chat completions: JSON, and the stream with its usage chunk', async () => {
  const whole = (await expectMatchesContract(await call(chatCompletions.path, chat), chatCompletions)) as {
    choices: Array<{ message: { content: string } }>;
  };
  expect(whole.choices[0].message.content).toBe('Hi there!');
  const res = await call(chatCompletions.path, { ...chat, stream: true, stream_options: { include_usage: true } });
  expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
  const frames = (await expectMatchesContract(res, chatCompletions)) as Array<{ usage?: unknown }>;
  expect(frames.at(-1)?.usage).toEqual({
    prompt_tokens: expect.any(Number),
    completion_tokens: 3,
    total_tokens: expect.any(Number),
    cost: expect.stringMatching(/^\d+(\.\d+)?$/),
  });
});

test('the model list and one model; an unknown model is a documented 404', async () => {
  const list = (await expectMatchesContract(await call(listModels.path), listModels)) as { data: Array<{ id: string }> };
  expect(list.data.map((m) => m.id)).toEqual([...MODEL_CONFIGS]);
  expect(await expectMatchesContract(await call(`${listModels.path}/service_3_pi`), getModel)).toMatchObject({ id: 'service_3_pi' });
  const missing = await call(`${listModels.path}/gpt-4`);
  expect(missing.status).toBe(404);
  expect(await expectMatchesContract(missing, getModel)).toMatchObject({ detail: "The model 'gpt-4' does not exist" });
});

test('an answer with a field its schema does not name fails the check', async () => {
  const res = new Response(JSON.stringify({ created: 1, text: 'x', extra: true }), {
    status: 200,
    headers: { 'content-type': 'application/json' },
  });
  await expect(expectMatchesContract(res, inference)).rejects.toThrow(/fields its schema does not document/);
  const wrongType = new Response('{"created":1,"text":"x"}', { status: 200, headers: { 'content-type': 'text/plain' } });
  await expect(expectMatchesContract(wrongType, inference)).rejects.toThrow(/content-type text\/plain is not documented/);
  await expect(expectMatchesContract(new Response('{}', { status: 418 }), inference)).rejects.toThrow(/status not in the contract/);
});
