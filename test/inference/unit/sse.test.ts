import { readSse } from '../../../src/inference/openai/sse';

async function parse(chunks: string[]) {
  const enc = new TextEncoder();
  async function* body() {
    for (const c of chunks) yield enc.encode(c);
  }
  const out = [];
  for await (const e of readSse(body())) out.push(e);
  return out;
}

test('events split anywhere across network chunks, with LF, CRLF and CR line ends', async () => {
  const wire = 'data: {"a":1}\n\nevent: error\r\ndata: {"b":2}\r\n\r\n: comment\rdata: line1\rdata: line2\r\rdata: [DONE]\n\n';
  const expected = [
    { event: 'message', data: '{"a":1}' },
    { event: 'error', data: '{"b":2}' },
    { event: 'message', data: 'line1\nline2' },
    { event: 'message', data: '[DONE]' },
  ];
  expect(await parse([wire])).toEqual(expected);
  expect(await parse([...wire])).toEqual(expected); // one character per chunk
  for (let cut = 1; cut < wire.length; cut++) expect(await parse([wire.slice(0, cut), wire.slice(cut)])).toEqual(expected);
});

test('a multi-byte character split across chunks stays whole; a last event without a blank line is kept', async () => {
  const bytes = new TextEncoder().encode('data: 🙂 ok\n\ndata: tail');
  async function* body() {
    for (let i = 0; i < bytes.length; i++) yield bytes.subarray(i, i + 1);
  }
  const out = [];
  for await (const e of readSse(body())) out.push(e.data);
  expect(out).toEqual(['🙂 ok', 'tail']);
});
