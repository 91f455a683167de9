/**
 * A minimal Server-Sent Events reader (the WHATWG event-stream format): "field: value" lines,
 * events dispatched on a blank line, "data" lines joined with "\n", comments (":") ignored, CR,
 * LF and CRLF line ends, a UTF-8 character split across network chunks kept whole.
 */
export interface SseEvent {
  event: string;
  data: string;
}

export async function* readSse(body: AsyncIterable<Uint8Array>): AsyncGenerator<SseEvent> {
  const decoder = new TextDecoder();
  let buffer = '';
  let event = '';
  let data: string[] = [];
  let sawData = false;
  const lines = function* (final: boolean): Generator<string> {
    for (;;) {
      const m = /\r\n|\r|\n/.exec(buffer);
      if (!m) break;
      // A lone CR at the very end may be the first half of CRLF: wait for the next chunk.
      if (!final && m[0] === '\r' && m.index === buffer.length - 1) break;
      yield buffer.slice(0, m.index);
      buffer = buffer.slice(m.index + m[0].length);
    }
    if (final && buffer) {
      yield buffer;
      buffer = '';
    }
  };
  const handle = (line: string): SseEvent | null => {
    if (line === '') {
      const out = sawData ? { event: event || 'message', data: data.join('\n') } : null;
      event = '';
      data = [];
      sawData = false;
      return out;
    }
    if (line.startsWith(':')) return null;
    const i = line.indexOf(':');
    const field = i < 0 ? line : line.slice(0, i);
    let value = i < 0 ? '' : line.slice(i + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'data') {
      data.push(value);
      sawData = true;
    } else if (field === 'event') event = value;
    return null;
  };
  for await (const chunk of body) {
    buffer += decoder.decode(chunk, { stream: true });
    for (const line of lines(false)) {
      const e = handle(line);
      if (e) yield e;
    }
  }
  buffer += decoder.decode();
  for (const line of lines(true)) {
    const e = handle(line);
    if (e) yield e;
  }
  const last = handle('');
  if (last) yield last;
}
