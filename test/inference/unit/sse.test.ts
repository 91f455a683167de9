import { SseEvent, SseParser } from '../../../src/inference/openai/sse';

/** Feeds the parser one network chunk at a time, as the backend's 'data' handler does. */
function parse(chunks: Uint8Array[]): SseEvent[] {
  const parser = new SseParser();
  const out: SseEvent[] = [];
  for (const c of chunks) out.push(...parser.push(c));
  out.push(...parser.end());
  return out;
}

const encode = (chunks: string[]) => chunks.map((c) => new TextEncoder().encode(c));

test('events split anywhere across network chunks, with LF, CRLF and CR line ends', () => {
  const wire = 'data: {"a":1}\n\nevent: error\r\ndata: {"b":2}\r\n\r\n: comment\rdata: line1\rdata: line2\r\rdata: [DONE]\n\n';
  const expected = [
    { event: 'message', data: '{"a":1}' },
    { event: 'error', data: '{"b":2}' },
    { event: 'message', data: 'line1\nline2' },
    { event: 'message', data: '[DONE]' },
  ];
  expect(parse(encode([wire]))).toEqual(expected);
  expect(parse(encode([...wire]))).toEqual(expected); // one character per chunk
  for (let cut = 1; cut < wire.length; cut++) expect(parse(encode([wire.slice(0, cut), wire.slice(cut)]))).toEqual(expected);
});

test('a multi-byte character split across chunks stays whole; a last event without a blank line is kept', () => {
  const bytes = new TextEncoder().encode('data: 🙂 ok\n\ndata: tail');
  const chunks: Uint8Array[] = [];
  for (let i = 0; i < bytes.length; i++) chunks.push(bytes.subarray(i, i + 1));
  expect(parse(chunks).map((e) => e.data)).toEqual(['🙂 ok', 'tail']);
});
