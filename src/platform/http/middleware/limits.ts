import { HttpError } from './errors';

/**
 * In-process caps on work that holds a server resource (a thread, a connection). They refuse at
 * once rather than queue without bound: a flood is turned away fast and the work already admitted
 * finishes in time.
 */

/** At most `max` tasks run at once and at most `maxQueued` wait; the next one is refused. */
export class WorkGate {
  private running = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(
    private readonly max: number,
    private readonly maxQueued: number,
    private readonly busy: () => Error,
  ) {}

  /** True when `run` would refuse now: callers can refuse before doing any other work. */
  get full(): boolean {
    return this.running >= this.max && this.waiting.length >= this.maxQueued;
  }

  async run<T>(task: () => Promise<T>): Promise<T> {
    if (this.running >= this.max) {
      if (this.waiting.length >= this.maxQueued) throw this.busy();
      await new Promise<void>((resolve) => this.waiting.push(resolve));
    } else {
      this.running++;
    }
    try {
      return await task();
    } finally {
      const next = this.waiting.shift();
      // The slot passes straight to the next waiter, so `running` never dips and lets a newcomer jump the queue.
      if (next) next();
      else this.running--;
    }
  }

  get load() {
    return { running: this.running, queued: this.waiting.length };
  }
}

/** At most `max` open holds per key (a user's open streams); `acquire` returns the release, or throws 429. */
export class PerKeyCap {
  private readonly open = new Map<string, number>();

  constructor(
    private readonly max: number,
    private readonly what: string,
  ) {}

  acquire(key: string): () => void {
    const n = this.open.get(key) ?? 0;
    if (n >= this.max) {
      throw new HttpError(429, `Too many ${this.what} open at once (at most ${this.max}); close one and retry`, { 'Retry-After': '1' });
    }
    this.open.set(key, n + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (this.open.get(key) ?? 1) - 1;
      if (left <= 0) this.open.delete(key);
      else this.open.set(key, left);
    };
  }

  count(key: string): number {
    return this.open.get(key) ?? 0;
  }
}
