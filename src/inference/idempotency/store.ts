import type { Redis } from 'ioredis';
import type { Keyspace } from '../../platform/projections/keyspace';
import { luaScript } from '../../platform/redis-scripts';

/**
 * The replies of inference calls sent with an `Idempotency-Key`, kept in Redis (never in the event
 * store: the reply text is the caller's content, kept only for the replay window).
 *
 *   {prefix}idem:{keyId}:{idempotency key}   JSON, TTL = the window
 *     running: {s:"run", h, t, st, lease, exp, rid}   a call in progress (started at `st`); its process renews `lease`
 *     done:    {s:"done", h, exp, rid, reply}     the recorded answer, replayed to retries
 *
 * `h` is the hash of the request (route and body): the same key with another body is refused.
 * `exp` and `lease` are milliseconds of the service clock (so a test clock moves them); the TTL is
 * Redis's own clean-up. A running record whose lease ran out belongs to a process that died: the
 * next retry takes it over and runs the call anew.
 *
 * A retry that arrives while the call runs is told when to come back (`Retry-After`): the typical
 * duration of the calls this process has recorded, less the time the running one has already taken,
 * at least 1 s and at most the lease left. The lease (30 s) is a bound for a dead process, not an
 * estimate: most calls end within a second or two.
 */

/** Before any call was recorded: a short answer, as most calls end within a second. */
const FIRST_TYPICAL_MS = 1000;
/** Weight of the newest call in the running average of durations. */
const NEWEST_WEIGHT = 0.2;

export interface RecordedReply {
  status: number;
  headers: Record<string, string>;
  /** The body as written, write by write (one entry per stream frame when streamed). */
  chunks: string[];
}

export type Claim =
  | { kind: 'claimed'; token: string; previousRequestId: string | null }
  | { kind: 'mismatch' }
  | { kind: 'running'; retryAfterSeconds: number }
  | { kind: 'done'; requestId: string; reply: RecordedReply };

const CLAIM = luaScript('inference/idempotency/claim.lua', {
  keys: ['record'],
  args: ['nowMs', 'requestHash', 'token', 'leaseMs', 'windowMs', 'requestId'],
});
/** The value (the lease's end, the reply) follows the named arguments; a release sends none. */
const OWNER = luaScript('inference/idempotency/owner.lua', { keys: ['record'], args: ['token', 'action'], rest: true });

export class IdempotencyStore {
  private readonly claimScript: ReturnType<typeof CLAIM.bind>;
  private readonly ownerScript: ReturnType<typeof OWNER.bind>;
  private typicalMs = FIRST_TYPICAL_MS;
  private observed = false;

  constructor(
    redis: Redis,
    private readonly ks: Keyspace,
    readonly windowMs: number,
    readonly leaseMs: number,
    readonly nowMs: () => number,
    private readonly newToken: () => string,
  ) {
    this.claimScript = CLAIM.bind(redis, 'tollgateIdemClaim');
    this.ownerScript = OWNER.bind(redis, 'tollgateIdemOwner');
  }

  key(keyId: string, idempotencyKey: string): string {
    return `${this.ks.prefix}idem:${keyId}:${idempotencyKey}`;
  }

  async claim(key: string, requestHash: string, requestId: string): Promise<Claim> {
    const token = this.newToken();
    const [kind, value] = (await this.claimScript(
      { record: key },
      { nowMs: this.nowMs(), requestHash, token, leaseMs: this.leaseMs, windowMs: this.windowMs, requestId },
    )) as [string, string?];
    if (kind === 'mismatch') return { kind };
    if (kind === 'running') {
      const [elapsedMs, leaseLeftMs] = (value ?? '0 0').split(' ').map(Number);
      const seconds = Math.ceil((this.typicalMs - elapsedMs) / 1000);
      return { kind, retryAfterSeconds: Math.max(1, Math.min(seconds, Math.ceil(leaseLeftMs / 1000))) };
    }
    if (kind === 'done') {
      const r = JSON.parse(value ?? '{}') as { rid: string; reply: RecordedReply };
      return { kind, requestId: r.rid, reply: r.reply };
    }
    return { kind: 'claimed', token, previousRequestId: value ? value : null };
  }

  /** How long a recorded call took (its claim to its recorded answer): the basis of `Retry-After`. */
  observeDuration(ms: number): void {
    if (!(ms >= 0)) return;
    this.typicalMs = this.observed ? this.typicalMs + NEWEST_WEIGHT * (ms - this.typicalMs) : ms;
    this.observed = true;
  }

  async renew(key: string, token: string): Promise<boolean> {
    return (await this.ownerScript({ record: key }, { token, action: 'lease' }, [this.nowMs() + this.leaseMs])) === 1;
  }

  async complete(key: string, token: string, reply: RecordedReply): Promise<boolean> {
    return (await this.ownerScript({ record: key }, { token, action: 'done' }, [JSON.stringify(reply)])) === 1;
  }

  async release(key: string, token: string): Promise<boolean> {
    return (await this.ownerScript({ record: key }, { token, action: 'release' })) === 1;
  }
}
