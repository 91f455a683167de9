import { Readable } from 'node:stream';
import { OpenAiBackend } from '../../../src/inference/openai/backend';
import { renderPrompt } from '../../../src/inference/prompt';

/** The backend over a stubbed upstream whose body is `body` (no network). */
function backendOn(body: Readable): OpenAiBackend {
  const backend = new OpenAiBackend({
    service_3_pi: { baseUrl: 'http://upstream.invalid/v1', model: 'm' },
    service_3_productivity: { baseUrl: 'http://upstream.invalid/v1', model: 'm' },
  });
  const pool = { request: async () => ({ statusCode: 200, body }) };
  (backend as unknown as { route: () => unknown }).route = () => ({ pool, path: '/v1/chat/completions', headers: {}, model: 'm' });
  return backend;
}

const prompt = renderPrompt({ config: 'service_3_pi', context: [{ type: 'Human', text: 'hi' }], metadata: {}, now: new Date(0) });
const params = {
  config: 'service_3_pi' as const,
  prompt,
  temperature: 1,
  topP: 1,
  maxTokens: 100,
  stop: [],
  seed: 1,
  signal: new AbortController().signal,
};
const event = (content: string) => `data: ${JSON.stringify({ choices: [{ index: 0, delta: { content }, finish_reason: null }] })}\n\n`;

test('a consumer far behind pauses the upstream body; every delta still arrives, in order', async () => {
  const body = new Readable({ read() {} });
  const words = Array.from({ length: 100 }, (_, i) => ` w${i}`);
  // All of them in one network chunk, then the end.
  body.push(Buffer.from(words.map(event).join('') + 'data: [DONE]\n\n'));
  body.push(null);
  const it = backendOn(body).generate(params);
  const got: string[] = [];
  const first = await it.next();
  got.push(first.value as string);
  // 99 deltas read ahead and not taken: the body waits.
  expect(body.isPaused()).toBe(true);
  for (;;) {
    const step = await it.next();
    if (step.done) {
      expect(step.value).toBe('stop');
      break;
    }
    got.push(step.value);
  }
  expect(got).toEqual(words);
  expect(body.isPaused()).toBe(false);
});

test('deltas split across network chunks anywhere (a multi-byte character too) arrive whole', async () => {
  const body = new Readable({ read() {} });
  const wire = Buffer.from(event('héllo 🙂') + event(' wörld') + 'data: [DONE]\n\n');
  const it = backendOn(body).generate(params);
  const pending = (async () => {
    const out: string[] = [];
    for (;;) {
      const step = await it.next();
      if (step.done) return out;
      out.push(step.value);
    }
  })();
  for (let i = 0; i < wire.length; i += 3) body.push(wire.subarray(i, i + 3));
  body.push(null);
  expect(await pending).toEqual(['héllo 🙂', ' wörld']);
});

test('a malformed event after some deltas: the deltas, then an UpstreamError; the body is destroyed', async () => {
  const body = new Readable({ read() {} });
  body.push(Buffer.from(event('ok') + 'data: {not json\n\n'));
  const it = backendOn(body).generate(params);
  expect((await it.next()).value).toBe('ok');
  await expect(it.next()).rejects.toThrow('malformed stream event');
  expect(body.destroyed).toBe(true);
});

test('a body destroyed without an error mid-stream ends the generation with an UpstreamError, never a hang', async () => {
  const body = new Readable({ read() {} });
  body.push(Buffer.from(event('partial')));
  const it = backendOn(body).generate(params);
  expect((await it.next()).value).toBe('partial');
  const next = it.next();
  body.destroy();
  await expect(next).rejects.toThrow('model upstream stream broke: the body closed before its end');
});
