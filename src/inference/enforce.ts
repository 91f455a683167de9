import { IncrementalCounter, truncateToTokens } from './tokenizer';

/**
 * Enforces max_tokens and stop strings on a stream of text deltas, by our own cl100k_base count,
 * whatever the backend does:
 * - a stop string ends the reply and is never sent, also when it arrives split across chunks: a
 *   chunk's tail that could still become a stop string is held back until the next chunk decides;
 * - the reply is at most max_tokens tokens: when the text goes past max_tokens the reply ends
 *   ('length'), cut to its first max_tokens tokens (exactly max_tokens for ordinary text);
 * - text once released is never taken back: the concatenated releases are the reply.
 *
 * The work per chunk does not grow with the reply so far: only the held-back text (shorter than
 * the longest stop string) is scanned again, the count is incremental (IncrementalCounter.exceeds
 * encodes nothing while the reply's bytes prove it within max_tokens), and the released text is
 * kept as parts, joined once when the reply is read.
 */
export class OutputEnforcer {
  private readonly counter = new IncrementalCounter();
  private readonly stops: string[];
  private readonly maxStop: number;
  private bytes = 0;
  private released: string[] = [];
  /** Pushed, not yet released: a tail that may still become a stop string. */
  private held = '';
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
    if (this.released.length > 1) this.released = [this.released.join('')];
    return this.released[0] ?? '';
  }

  /** Adds a chunk; returns the text that may be sent now (possibly ''). */
  push(chunk: string): string {
    if (this.reason || this.closed || chunk.length === 0) return '';
    let pending = this.held + chunk;
    const at = this.stops.length ? this.findStop(pending) : -1;
    if (at >= 0) {
      this.reason = 'stop';
      if (at >= this.held.length) this.add(chunk.slice(0, at - this.held.length));
      else this.drop(this.held.length - at);
      pending = pending.slice(0, at);
    } else {
      this.add(chunk);
    }
    // A token is at least one byte: while the text has no more bytes than max_tokens, it fits.
    // Reaching exactly max_tokens does not end the reply: the next chunk may merge into the last
    // token ("\n" + "\n" is one token). Going past it does: the reply is cut to its first
    // max_tokens tokens.
    if (this.bytes > this.opts.maxTokens && this.counter.exceeds(this.opts.maxTokens)) {
      const sent = this.emitted;
      let kept = truncateToTokens(sent + pending, this.opts.maxTokens);
      if (!kept.startsWith(sent)) kept = sent;
      pending = kept.slice(sent.length);
      this.counter.reset(kept);
      this.bytes = Buffer.byteLength(kept);
      this.reason = 'length';
    }
    const end = this.reason ? pending.length : pending.length - this.holdback(pending);
    this.held = pending.slice(end);
    return this.release(pending.slice(0, end));
  }

  /**
   * Ends the reply. `complete`: the reply ended normally (the backend finished, or a stop string
   * or max_tokens decided it): held-back text is released and returned. Otherwise (the caller left,
   * the upstream failed) the reply is what was already released.
   */
  finish(complete: boolean): string {
    if (this.closed) return '';
    this.closed = true;
    const held = this.held;
    if (!complete) this.drop(held.length);
    this.held = '';
    return complete ? this.release(held) : '';
  }

  /** The reply (after finish: exactly the concatenated releases). */
  get text(): string {
    return this.emitted + this.held;
  }

  /** cl100k_base tokens of the reply. */
  get outputTokens(): number {
    return this.counter.count();
  }

  private add(text: string): void {
    this.counter.push(text);
    this.bytes += Buffer.byteLength(text);
  }

  /** Takes the last `n` pushed characters (all of them still held) out of the count. */
  private drop(n: number): void {
    if (n === 0) return;
    const gone = this.held.slice(this.held.length - n);
    this.bytes -= Buffer.byteLength(gone);
    if (!this.counter.dropLast(n)) this.counter.reset(this.emitted + this.held.slice(0, this.held.length - n));
  }

  private release(out: string): string {
    if (!out) return '';
    this.released.push(out);
    return out;
  }

  private findStop(text: string): number {
    let best = -1;
    for (const s of this.stops) {
      const i = text.indexOf(s);
      if (i >= 0 && (best < 0 || i < best)) best = i;
    }
    return best;
  }

  /** Length of the longest suffix of `text` that is a proper prefix of a stop string. */
  private holdback(text: string): number {
    let best = 0;
    const tail = text.slice(Math.max(0, text.length - this.maxStop + 1));
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
