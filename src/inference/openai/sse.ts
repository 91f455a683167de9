/**
 * A minimal Server-Sent Events reader (the WHATWG event-stream format): "field: value" lines,
 * events dispatched on a blank line, "data" lines joined with "\n", comments (":") ignored, CR,
 * LF and CRLF line ends, a UTF-8 character split across network chunks kept whole.
 */
export interface SseEvent {
  event: string;
  data: string;
}

/**
 * The reader as a plain object fed network chunks: `push` returns the events they complete, with
 * no promise or generator step per chunk or event (the upstream's chunk path calls it from the
 * body's 'data' handler). Complete lines are found with indexOf and what is left is sliced once
 * per network chunk: no regex match or re-slice per line.
 */
export class SseParser {
  private readonly decoder = new TextDecoder();
  private buffer = '';
  private event = '';
  private data: string[] = [];
  private sawData = false;

  /** The events that `chunk` completes (often none or one). */
  push(chunk: Uint8Array): SseEvent[] {
    this.buffer += this.decoder.decode(chunk, { stream: true });
    return this.drain(false);
  }

  /** The body ended: the events still open (a last event without its blank line included). */
  end(): SseEvent[] {
    this.buffer += this.decoder.decode();
    const out = this.drain(true);
    const last = this.line('');
    if (last) out.push(last);
    return out;
  }

  private drain(final: boolean): SseEvent[] {
    const out: SseEvent[] = [];
    const buffer = this.buffer;
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
      const e = this.line(buffer.slice(start, end));
      if (e) out.push(e);
      start = next;
    }
    this.buffer = start ? buffer.slice(start) : buffer;
    if (final && this.buffer) {
      const e = this.line(this.buffer);
      if (e) out.push(e);
      this.buffer = '';
    }
    return out;
  }

  private line(line: string): SseEvent | null {
    if (line === '') {
      const out = this.sawData
        ? { event: this.event || 'message', data: this.data.length === 1 ? this.data[0] : this.data.join('\n') }
        : null;
      this.event = '';
      this.data = [];
      this.sawData = false;
      return out;
    }
    if (line.charCodeAt(0) === 58 /* : */) return null;
    const i = line.indexOf(':');
    const field = i < 0 ? line : line.slice(0, i);
    let value = i < 0 ? '' : line.slice(i + 1);
    if (value.charCodeAt(0) === 32) value = value.slice(1);
    if (field === 'data') {
      this.data.push(value);
      this.sawData = true;
    } else if (field === 'event') this.event = value;
    return null;
  }
}
