import { chatChunkFrames } from '../../../src/inference/routes/openai-routes';
import { sseFrame } from '../../../src/platform/http/sse';

/** The chunk object the OpenAI route sent before its frames were pre-encoded: the bytes must not change. */
const chunkObject = (id: string, created: number, model: string, fp: string, delta: object, finish: string | null) => ({
  id,
  object: 'chat.completion.chunk',
  created,
  model,
  system_fingerprint: fp,
  choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
});

describe('chatChunkFrames', () => {
  const texts = [
    'Hello',
    '',
    ' word',
    'quote " and \\ backslash',
    'lines\n\r\ttab \u0000 \u2028',
    'emoji 😀 中文',
    'lone \ud800 surrogate',
    '</script>',
  ];
  const heads: Array<[string, number, string, string]> = [
    ['chatcmpl-0b6c5a3e-1', 1_764_115_200, 'service_3_pi', 'gpt-4o-mini'],
    ['chatcmpl-"odd"', 0, 'm\\odel', 'fp\n'],
  ];

  it.each(heads)('writes a text chunk byte for byte as sseFrame of the chunk object (id %s)', (id, created, model, fp) => {
    const frames = chatChunkFrames(id, created, model, fp);
    for (const text of texts) {
      expect(frames.text(text, true)).toBe(sseFrame(chunkObject(id, created, model, fp, { role: 'assistant', content: text }, null)));
      expect(frames.text(text, false)).toBe(sseFrame(chunkObject(id, created, model, fp, { content: text }, null)));
    }
  });

  it.each(heads)('writes the finishing chunk byte for byte as sseFrame of the chunk object (id %s)', (id, created, model, fp) => {
    const frames = chatChunkFrames(id, created, model, fp);
    for (const reason of ['stop', 'length']) {
      expect(frames.finish(reason, true)).toBe(sseFrame(chunkObject(id, created, model, fp, { role: 'assistant', content: '' }, reason)));
      expect(frames.finish(reason, false)).toBe(sseFrame(chunkObject(id, created, model, fp, {}, reason)));
    }
  });
});
