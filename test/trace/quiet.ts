import type { Redis } from 'ioredis';
import type { Services } from '../../src/services';
import { patience } from '../support/wait';

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Every key of `pattern` (SCAN), on a connection of our own. */
async function keysOf(redis: Redis, pattern: string): Promise<string[]> {
  const out: string[] = [];
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
    cursor = next;
    out.push(...keys);
  } while (cursor !== '0');
  return out.sort();
}

/**
 * Whether everything a request set going is done: no new event for two polls, every projection's and
 * reactor's checkpoint at the store's head, and no BullMQ job of the service's prefix waiting or
 * running. It reads Redis on a connection of its own and the store through the service's adapter
 * (the idle window repeats the same polls, so they are not counted as the request's).
 */
export class Quiet {
  private checkpoints: string[] = [];
  private queues: string[] = [];

  private constructor(
    private readonly s: Services,
    private readonly redis: Redis,
  ) {}

  /** Finds the checkpoint keys and queues (after the scenario's set-up has created them). */
  static async watch(s: Services): Promise<Quiet> {
    const redis = await s.connectRedis('trace-request');
    return new Quiet(s, redis);
  }

  private async discover(): Promise<void> {
    const { ks } = this.s;
    const checkpoints = [
      ...(await keysOf(this.redis, `${ks.checkpoint('*', '*')}*`)),
      ...(await keysOf(this.redis, `${ks.reactorCheckpoint('*')}*`)),
    ];
    const metas = await keysOf(this.redis, `${ks.prefix}*:meta`);
    this.checkpoints = checkpoints;
    this.queues = metas.map((k) => k.slice(0, -':meta'.length));
  }

  /** One look: whether everything is done, and at which head. */
  async poll(opts: { queues?: boolean } = {}): Promise<{ head: bigint; done: boolean }> {
    const head = await this.s.store.headPosition();
    const cps = this.checkpoints.length ? await this.redis.mget(...this.checkpoints) : [];
    const caughtUp = cps.every((v) => v !== null && BigInt(v) >= head);
    let idleQueues = true;
    if (opts.queues !== false && this.queues.length) {
      const p = this.redis.pipeline();
      for (const q of this.queues) p.llen(`${q}:wait`).llen(`${q}:active`).zcard(`${q}:prioritized`);
      const counts = (await p.exec()) ?? [];
      idleQueues = counts.every(([err, n]) => !err && n === 0);
    }
    return { head, done: caughtUp && idleQueues };
  }

  /**
   * Waits until done twice in a row at the same head. It reads no events (that would run the
   * store's decoding, which the projector runs too, in the idle window): the caller reads them after.
   */
  async settle(opts: { queues?: boolean } = {}): Promise<void> {
    if (!this.checkpoints.length) await this.discover();
    const limit = patience(120_000);
    const deadline = Date.now() + limit;
    let lastHead = -1n;
    for (;;) {
      const r = await this.poll(opts);
      if (r.done && r.head === lastHead) return;
      lastHead = r.done ? r.head : -1n;
      if (Date.now() > deadline) {
        const cps = this.checkpoints.length ? await this.redis.mget(...this.checkpoints) : [];
        throw new Error(
          `timed out after ${limit} ms waiting for the service to settle (head ${r.head}; ` +
            `checkpoints ${this.checkpoints.map((k, i) => `${k.slice(this.s.ks.prefix.length)}=${cps[i]}`).join(' ')})`,
        );
      }
      await sleep(10);
    }
  }

  async until(fn: () => Promise<boolean>, what: string): Promise<void> {
    const deadline = Date.now() + patience(120_000);
    while (!(await fn())) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await sleep(10);
    }
  }

  close(): void {
    this.redis.disconnect();
  }
}
