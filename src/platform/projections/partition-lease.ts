import type { Redis } from 'ioredis';
import type { PartitionKeyspace } from './partitions';
import { luaScript } from '../redis-scripts';

/**
 * One owner per partition: a Redis lease (`lease`, expiring) carrying a fencing token (`fence`,
 * incremented at every change of owner). The owner renews the lease well before it expires; a
 * projector that finds it expired takes the partition with the next token. The runner WATCHes
 * `fence` and checks it holds its token before every batch (switch-over.ts guardBatch), so
 * the batch of an owner that was paused past its lease (SIGSTOP, a long GC, a network split) and
 * whose partition moved is refused: its MULTI does not commit. Redis is the single arbiter: the
 * check and the commit happen on the Redis that holds the read models.
 */

const ACQUIRE = luaScript('platform/projections/lease-acquire.lua', { keys: ['lease', 'fence', 'fenceCounter'], args: ['owner', 'ttlMs'] });
const RENEW = luaScript('platform/projections/lease-renew.lua', { keys: ['lease', 'fence'], args: ['token', 'ttlMs'] });
const RELEASE = luaScript('platform/projections/lease-release.lua', { keys: ['lease'], args: ['token'] });

export class PartitionLease {
  token: string | null = null;

  constructor(
    private readonly redis: Redis,
    readonly ks: PartitionKeyspace,
    private readonly owner: string,
    private readonly ttlMs: number,
  ) {}

  /** Takes the partition if nobody holds it; true if this owner holds it now. */
  async acquire(): Promise<boolean> {
    if (this.token !== null) return this.renew();
    const t = (await ACQUIRE.eval(this.redis, this.ks, { owner: this.owner, ttlMs: this.ttlMs })) as string | null;
    if (t === null) return false;
    this.token = t;
    return true;
  }

  /** Extends the lease; false (and forgets the token) if the partition is no longer this owner's. */
  async renew(): Promise<boolean> {
    if (this.token === null) return false;
    const ok = (await RENEW.eval(this.redis, this.ks, { token: this.token, ttlMs: this.ttlMs })) === 1;
    if (!ok) this.token = null;
    return ok;
  }

  async release(): Promise<void> {
    if (this.token === null) return;
    await RELEASE.eval(this.redis, this.ks, { token: this.token });
    this.token = null;
  }
}
