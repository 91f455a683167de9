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
  // Complete lines of `buffer` to `handle`, the events they end to `ready`. A scan with indexOf and
  // one slice of what is left per network chunk: no generator, regex match or re-slice per line.
  const ready: SseEvent[] = [];
  const drain = (final: boolean) => {
    let start = 0;
    let lf = -2;
    let cr = -2;
    for (;;) {
      if (lf !== -1 && lf < start) lf = buffer.indexOf('\n', start);
      if (cr !== -1 && cr < start) cr = buffer.indexOf('\r', start);
      const end = cr < 0 ? lf : lf < 0 ? cr : Math.min(cr, lf);
      if (end < 0) break;
      let next = end + 1;
      if (end === cr) {
        // A lone CR at the very end may be the first half of CRLF: wait for the next chunk.
        if (!final && end === buffer.length - 1) break;
        if (buffer.charCodeAt(next) === 10) next++;
      }
      const e = handle(buffer.slice(start, end));
      if (e) ready.push(e);
      start = next;
    }
    buffer = start ? buffer.slice(start) : buffer;
    if (final && buffer) {
      const e = handle(buffer);
      if (e) ready.push(e);
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
    drain(false);
    // One by one: `yield*` over an array in an async generator costs a promise per element.
    for (let i = 0; i < ready.length; i++) yield ready[i];
    ready.length = 0;
  }
  buffer += decoder.decode();
  drain(true);
  const last = handle('');
  if (last) ready.push(last);
  for (let i = 0; i < ready.length; i++) yield ready[i];
}
