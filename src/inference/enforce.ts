import { IncrementalCounter, truncateToTokens } from './tokenizer';

/**
 * Enforces max_tokens and stop strings on a stream of text deltas, by our own cl100k_base count,
 * whatever the backend does:
 * - a stop string ends the reply and is never sent, also when it arrives split across chunks: a
 *   chunk's tail that could still become a stop string is held back until the next chunk decides;
 * - the reply is at most max_tokens tokens: when the text goes past max_tokens the reply ends
 *   ('length'), cut to its first max_tokens tokens (exactly max_tokens for ordinary text);
 * - text once released is never taken back: the concatenated releases are the reply.
 */
export class OutputEnforcer {
  private readonly counter = new IncrementalCounter();
  private readonly stops: string[];
  private readonly maxStop: number;
  private bytes = 0;
  private emittedLen = 0;
  private reason: 'stop' | 'length' | null = null;
  private closed = false;

  constructor(private readonly opts: { maxTokens: number; stop: string[] }) {
    this.stops = opts.stop.filter((s) => s.length > 0);
    this.maxStop = this.stops.reduce((m, s) => Math.max(m, s.length), 0);
  }

  /** 'stop' or 'length' once the reply is decided; further chunks are ignored. */
  get finished(): 'stop' | 'length' | null {
    return this.reason;
  }

  /** The text released so far. */
  get emitted(): string {
    return this.counter.value.slice(0, this.emittedLen);
  }

  /** Adds a chunk; returns the text that may be sent now (possibly ''). */
  push(chunk: string): string {
    if (this.reason || this.closed || chunk.length === 0) return '';
    let full = this.counter.value + chunk;
    let cut = false;
    if (this.stops.length) {
      const at = this.findStop(full, this.emittedLen);
      if (at >= 0) {
        full = full.slice(0, at);
        this.reason = 'stop';
        cut = true;
      }
    }
    if (cut) {
      this.counter.reset(full);
      this.bytes = Buffer.byteLength(full);
    } else {
      this.counter.push(chunk);
      this.bytes += Buffer.byteLength(chunk);
    }
    // A token is at least one byte: while the text has no more bytes than max_tokens, it fits.
    // Reaching exactly max_tokens does not end the reply: the next chunk may merge into the last
    // token ("\n" + "\n" is one token). Going past it does: the reply is cut to its first
    // max_tokens tokens.
    if (this.bytes > this.opts.maxTokens && this.counter.count() > this.opts.maxTokens) {
      const sent = this.emitted;
      let kept = truncateToTokens(full, this.opts.maxTokens);
      if (!kept.startsWith(sent)) kept = sent;
      full = kept;
      this.counter.reset(full);
      this.bytes = Buffer.byteLength(full);
      this.reason = 'length';
    }
    const end = this.reason ? full.length : full.length - this.holdback(full);
    return this.release(end);
  }

  /**
   * Ends the reply. `complete`: the reply ended normally (the backend finished, or a stop string
   * or max_tokens decided it): held-back text is released and returned. Otherwise (the caller left,
   * the upstream failed) the reply is what was already released.
   */
  finish(complete: boolean): string {
    if (this.closed) return '';
    this.closed = true;
    if (complete) return this.release(this.counter.value.length);
    this.counter.reset(this.emitted);
    return '';
  }

  /** The reply (after finish: exactly the concatenated releases). */
  get text(): string {
    return this.counter.value.slice(0, this.closed ? this.emittedLen : undefined);
  }

  /** cl100k_base tokens of the reply. */
  get outputTokens(): number {
    if (this.closed) this.counter.reset(this.emitted);
    return this.counter.count();
  }

  private release(end: number): string {
    if (end <= this.emittedLen) return '';
    const out = this.counter.value.slice(this.emittedLen, end);
    this.emittedLen = end;
    return out;
  }

  private findStop(text: string, from: number): number {
    let best = -1;
    for (const s of this.stops) {
      const i = text.indexOf(s, from);
      if (i >= 0 && (best < 0 || i < best)) best = i;
    }
    return best;
  }

  /** Length of the longest suffix of `text` that is a proper prefix of a stop string. */
  private holdback(text: string): number {
    let best = 0;
    const tail = text.slice(Math.max(this.emittedLen, text.length - this.maxStop + 1));
    for (const s of this.stops) {
      for (let k = Math.min(s.length - 1, tail.length); k > best; k--) {
        if (tail.endsWith(s.slice(0, k))) {
          best = k;
          break;
        }
      }
    }
    return best;
  }
}
