import type { Response } from 'express';

/** One server-sent event: `event: <name>` when given, `data: <json>` (a string is sent as is), a blank line. */
export function sseFrame(data: unknown, event?: string): string {
  const payload = typeof data === 'string' ? data : JSON.stringify(data);
  return `${event ? `event: ${event}\n` : ''}data: ${payload}\n\n`;
}

/**
 * Writes a text/event-stream response: headers on the first write, backpressure respected (a
 * slow reader pauses generation instead of filling memory), writes after the caller left ignored.
 *
 * Two ways to write: `send` for a producer that can wait (generation awaits each chunk), and
 * `push` for one that cannot (Redis pub/sub): frames queue in order and go out one 'drain' at a
 * time, and a reader more than `maxBehindBytes` behind is refused, so the caller can end it.
 */
export class EventStreamWriter {
  private started = false;
  private ending = false;
  /** The frames pushed and not yet accepted by the socket, chained so they go out in order. */
  private tail: Promise<void> = Promise.resolve();
  private behind = 0;

  constructor(
    private readonly res: Response,
    private readonly maxBehindBytes = Infinity,
  ) {}

  get isStarted(): boolean {
    return this.started;
  }

  get isOpen(): boolean {
    return !this.ending && !this.res.destroyed && !this.res.writableEnded;
  }

  /** Bytes pushed that the socket has not taken yet. */
  get bytesBehind(): number {
    return this.behind;
  }

  /**
   * The status and headers of the stream. `flush` (default): sent at once, for a stream that may
   * stay silent (a live feed). A frame written right after passes false: the headers then leave
   * with it in one socket write, which is one wake-up of the reader instead of two before its
   * first chunk.
   */
  start(flush = true): void {
    if (!this.started) {
      this.started = true;
      this.res.status(200);
      this.res.setHeader('Content-Type', 'text/event-stream; charset=utf-8');
      this.res.setHeader('Cache-Control', 'no-cache, no-transform');
      this.res.setHeader('Connection', 'keep-alive');
      this.res.setHeader('X-Accel-Buffering', 'no');
    }
    if (flush && !this.res.headersSent) this.res.flushHeaders();
  }

  /** `data: <json>` (+ `event: <name>` when given), then a blank line. Rejects when the caller is gone. */
  async send(data: unknown, event?: string): Promise<void> {
    return this.write(sseFrame(data, event));
  }

  /**
   * Queues a raw frame (a `sseFrame`, or `: comment\n\n`) behind the ones already pushed, without
   * waiting. False when the reader is gone or would fall more than `maxBehindBytes` behind: the
   * frame is dropped and the caller should end the stream.
   */
  push(frame: string): boolean {
    this.start();
    if (!this.isOpen) return false;
    const size = Buffer.byteLength(frame);
    if (this.behind + size > this.maxBehindBytes) return false;
    this.behind += size;
    this.tail = this.tail
      .then(() => (this.isOpen ? this.write(frame) : undefined))
      .catch(() => undefined)
      .finally(() => (this.behind -= size));
    return true;
  }

  /**
   * A raw frame. Returns nothing when the socket took it, a promise of its 'drain' when the
   * socket's buffer is full: a producer awaits only then (no promise per chunk otherwise). Throws
   * when the caller is gone.
   */
  write(frame: string): Promise<void> | void {
    this.start(false);
    if (!this.isOpen) throw new Error('the caller is gone');
    if (!this.res.write(frame)) {
      return new Promise<void>((resolve) => {
        const done = () => {
          this.res.off('drain', done);
          this.res.off('close', done);
          resolve();
        };
        this.res.on('drain', done);
        this.res.on('close', done);
      });
    }
  }

  /** Ends the stream; with a last frame, that frame goes out at once and the frames still queued are dropped. */
  end(last?: string): void {
    this.start();
    if (!this.isOpen) return;
    this.ending = true;
    if (last) this.res.write(last);
    this.res.end();
  }
}

/** An AbortSignal that fires when the caller disconnects before the response finished. */
export function disconnectSignal(res: Response): AbortSignal {
  const ac = new AbortController();
  const gone = () => {
    if (!res.writableFinished) ac.abort(new Error('client disconnected'));
  };
  // The caller may already have left while the request was being prepared.
  if (res.closed || res.destroyed || res.socket?.destroyed) gone();
  else res.on('close', gone);
  return ac.signal;
}
