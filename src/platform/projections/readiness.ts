import type { Redis } from 'ioredis';
import type { Keyspace } from './keyspace';

/**
 * Which read models are usable: the projector sets a projection's ready marker once it has caught
 * it up, and the marker disappears with everything else when Redis loses its data. Followed by
 * polling (every `intervalMs`); a request that finds a read model not ready checks again before
 * refusing, so the only stale window is the other way round (up to `intervalMs` after a loss).
 */
export class ReadModelReadiness {
  private missing = new Set<string>();
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly redis: Redis,
    private readonly ks: Keyspace,
    readonly names: string[],
    private readonly intervalMs = 250,
  ) {}

  async refresh(): Promise<void> {
    if (!this.names.length) return;
    const marks = await this.redis.mget(...this.names.map((n) => this.ks.ready(n)));
    this.missing = new Set(this.names.filter((_, i) => marks[i] === null));
  }

  start(): void {
    this.timer ??= setInterval(() => void this.refresh().catch(() => undefined), this.intervalMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  /** The read models among `names` that are not ready, checking Redis again if any looked so. */
  async notReady(names: string[]): Promise<string[]> {
    if (!names.some((n) => this.missing.has(n))) return [];
    await this.refresh().catch(() => undefined);
    return names.filter((n) => this.missing.has(n));
  }
}
