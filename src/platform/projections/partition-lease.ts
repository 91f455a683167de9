import type { Redis } from 'ioredis';
import type { PartitionKeyspace } from './partitions';

/**
 * One owner per partition: a Redis lease (`lease`, expiring) carrying a fencing token (`fence`,
 * incremented at every change of owner). The owner renews the lease well before it expires; a
 * projector that finds it expired takes the partition with the next token. The runner WATCHes
 * `fence` and checks it holds its token before every batch (switch-over.ts guardBatch), so
 * the batch of an owner that was paused past its lease (SIGSTOP, a long GC, a network split) and
 * whose partition moved is refused: its MULTI does not commit. Redis is the single arbiter: the
 * check and the commit happen on the Redis that holds the read models.
 */

// KEYS: lease, fence, counter. ARGV: owner id, ttl ms. Takes a free (expired) partition: returns the
// new token "{n}-{owner}" (the owner id is random per process, so a token is never handed out twice,
// even after Redis lost the counter), or false.
const ACQUIRE = `
if redis.call('EXISTS', KEYS[1]) == 1 then return false end
local token = redis.call('INCR', KEYS[3]) .. '-' .. ARGV[1]
redis.call('SET', KEYS[2], token)
redis.call('SET', KEYS[1], token, 'PX', ARGV[2])
return token`;

// KEYS: lease, fence. ARGV: token, ttl ms. Renews only the holder's own, current lease.
const RENEW = `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
if redis.call('GET', KEYS[2]) ~= ARGV[1] then return 0 end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1`;

// KEYS: lease. ARGV: token. Gives the partition up at once (a clean stop, a rebalance).
const RELEASE = `
if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) return 1 end
return 0`;

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
    const t = (await this.redis.eval(ACQUIRE, 3, this.ks.lease, this.ks.fence, this.ks.fenceCounter, this.owner, this.ttlMs)) as string | null;
    if (t === null) return false;
    this.token = t;
    return true;
  }

  /** Extends the lease; false (and forgets the token) if the partition is no longer this owner's. */
  async renew(): Promise<boolean> {
    if (this.token === null) return false;
    const ok = (await this.redis.eval(RENEW, 2, this.ks.lease, this.ks.fence, this.token, this.ttlMs)) === 1;
    if (!ok) this.token = null;
    return ok;
  }

  async release(): Promise<void> {
    if (this.token === null) return;
    await this.redis.eval(RELEASE, 1, this.ks.lease, this.token);
    this.token = null;
  }
}
