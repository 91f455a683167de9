import type { Redis } from 'ioredis';
import { Keyspace } from './keyspace';
import { partitionKeyspaces } from './partitions';

/** Lets a write wait until the projections have applied it, so the next request sees it. */
export interface ProjectionProgress {
  /** Resolves true once what this process follows applied `position` (a runner: its reactors too), false on timeout. */
  waitFor(position: bigint, timeoutMs: number): Promise<boolean>;
  /**
   * Resolves true once every read model (projection) applied `position`, whatever the reactors do:
   * what read-your-writes waits for, so an answer waits for the same thing in every role.
   */
  waitForReadModels(position: bigint, timeoutMs: number): Promise<boolean>;
}

/**
 * For an api process without a runner of its own: follows the runner's announcements on Redis
 * pub/sub, and polls the checkpoints as a safety net for a message missed before subscribing.
 */
export class RedisProgress implements ProjectionProgress {
  private latest = 0n;
  private readonly waiters = new Set<{ position: bigint; resolve: (ok: boolean) => void }>();
  private ready: Promise<unknown>;

  constructor(
    private readonly sub: Redis,
    private readonly redis: Redis,
    private readonly ks: Keyspace,
    private readonly names: string[],
    /** PROJECTION_PARTITIONS: a write is applied once every partition's checkpoint passed it. */
    private readonly partitions = 1,
    /**
     * How often a waiter polls between announcements (the safety net for one missed): a simulation
     * that delivers every announcement polls less often, so its schedules are not mostly polls.
     */
    private readonly pollMs = 50,
  ) {
    // With partitions, every partition's runner announces its OWN checkpoint on the one channel: a
    // partition with none of a write's events passes its position long before the partition that
    // applies them. So an announcement only says "look again", and the minimum over every
    // partition's checkpoints decides.
    this.sub.on('message', (_ch: string, msg: string) => (this.partitions > 1 ? this.pollSoon() : this.advance(BigInt(msg))));
    this.ready = this.sub.subscribe(ks.progressChannel);
  }

  private polling: Promise<void> | null = null;
  private pollAgain = false;

  /** One poll at a time; announcements that arrive during one ask for one more after it. */
  private pollSoon(): void {
    if (this.waiters.size === 0) return;
    if (this.polling) {
      this.pollAgain = true;
      return;
    }
    this.polling = this.poll()
      .catch(() => undefined)
      .finally(() => {
        this.polling = null;
        if (this.pollAgain) {
          this.pollAgain = false;
          this.pollSoon();
        }
      });
  }

  private advance(p: bigint): void {
    if (p <= this.latest) return;
    this.latest = p;
    for (const w of [...this.waiters]) if (w.position <= p) w.resolve(true);
  }

  private async poll(): Promise<void> {
    if (this.names.length === 0) return;
    const gens = await this.redis.mget(...this.names.map((n) => this.ks.active(n)));
    const pks = partitionKeyspaces(this.ks.prefix, this.partitions);
    const cps = await this.redis.mget(...pks.flatMap((ks) => this.names.map((n, i) => ks.checkpoint(n, gens[i] ?? '0'))));
    const min = cps.reduce<bigint | null>((m, c) => {
      const v = c ? BigInt(c) : 0n;
      return m === null || v < m ? v : m;
    }, null);
    if (min !== null) this.advance(min);
  }

  /** The projections' checkpoints are all an api process sees: the same as waitFor. */
  waitForReadModels(position: bigint, timeoutMs: number): Promise<boolean> {
    return this.waitFor(position, timeoutMs);
  }

  async waitFor(position: bigint, timeoutMs: number): Promise<boolean> {
    // No projection to wait for: every write is visible at once.
    if (this.names.length === 0) return true;
    await this.ready;
    if (this.latest >= position) return true;
    await this.poll();
    if (this.latest >= position) return true;
    return new Promise((resolve) => {
      const poller = setInterval(() => void this.poll().catch(() => undefined), this.pollMs);
      const timer = setTimeout(() => done(false), timeoutMs);
      const w = { position, resolve: (ok: boolean) => done(ok) };
      const done = (ok: boolean) => {
        clearInterval(poller);
        clearTimeout(timer);
        this.waiters.delete(w);
        resolve(ok);
      };
      this.waiters.add(w);
    });
  }
}
