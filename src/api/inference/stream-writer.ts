import type { Response } from 'express';

/**
 * Writes a text/event-stream response: headers on the first write, backpressure respected (a
 * slow reader pauses generation instead of filling memory), writes after the caller left ignored.
 */
export class EventStreamWriter {
  private started = false;

  constructor(private readonly res: Response) {}

  get isStarted(): boolean {
    return this.started;
  }

  get isOpen(): boolean {
    return !this.res.destroyed && !this.res.writableEnded;
  }

  start(): void {
    if (this.started) return;
    this.started = true;
    this.res.status(200);
    this.res.setHeader('Content-Type', 'text/event-stream; charset=utf-8');
    this.res.setHeader('Cache-Control', 'no-cache, no-transform');
    this.res.setHeader('Connection', 'keep-alive');
    this.res.setHeader('X-Accel-Buffering', 'no');
    this.res.flushHeaders();
  }

  /** `data: <json>` (+ `event: <name>` when given), then a blank line. Rejects when the caller is gone. */
  async send(data: unknown, event?: string): Promise<void> {
    this.start();
    if (!this.isOpen) throw new Error('the caller is gone');
    const payload = typeof data === 'string' ? data : JSON.stringify(data);
    const frame = `${event ? `event: ${event}\n` : ''}data: ${payload}\n\n`;
    if (!this.res.write(frame)) {
      await new Promise<void>((resolve) => {
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

  end(): void {
    this.start();
    if (this.isOpen) this.res.end();
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
