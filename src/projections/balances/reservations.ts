import type { Redis } from 'ioredis';
import type { NanoUsd } from '../../domain/money';
import { Keyspace } from '../keyspace';

/**
 * Open reservations live outside the projection's generations (they belong to requests in
 * flight, not to history), beside it under shared keys:
 *
 *   resv:{wsId}        hash requestId → reserved nano-USD
 *   resv-total:{wsId}  sum of that hash
 *   resv-open          sorted set "wsId:requestId" scored by reservation time (ms), for the sweeper
 */
export function reservationKeys(shared: (...parts: string[]) => string, workspaceId: string) {
  return {
    held: shared('resv', workspaceId),
    total: shared('resv-total', workspaceId),
    open: shared('resv-open'),
  };
}

/**
 * available = balance − open reservations must cover the amount, checked and held in one script.
 * All arithmetic is Redis's int64 (INCRBY) and string comparison: Lua numbers are doubles and
 * would round amounts above 2^53 nano-USD.
 */
const RESERVE = `
local gen = redis.call('GET', KEYS[1]) or '0'
local balance = redis.call('HGET', ARGV[1] .. gen .. ':ws:' .. ARGV[2], 'balance') or '0'
-- INCRBY's reply reaches Lua as a double: read the exact value back as a string.
redis.call('INCRBY', KEYS[3], ARGV[4])
local held = redis.call('GET', KEYS[3])
local function ge(a, b)
  local na, nb = string.sub(a, 1, 1) == '-', string.sub(b, 1, 1) == '-'
  if na ~= nb then return nb end
  if na then a, b = string.sub(b, 2), string.sub(a, 2) end
  if #a ~= #b then return #a > #b end
  return a >= b
end
if not ge(balance, held) then
  redis.call('DECRBY', KEYS[3], ARGV[4])
  return {0, balance, redis.call('GET', KEYS[3])}
end
redis.call('HSET', KEYS[2], ARGV[3], ARGV[4])
redis.call('ZADD', KEYS[4], ARGV[5], ARGV[2] .. ':' .. ARGV[3])
return {1, balance, held}`;

const RELEASE = `
local amt = redis.call('HGET', KEYS[1], ARGV[1])
if amt then
  redis.call('HDEL', KEYS[1], ARGV[1])
  redis.call('DECRBY', KEYS[2], amt)
end
redis.call('ZREM', KEYS[3], ARGV[2])
return amt`;

export type ReserveResult =
  | { ok: true; balance: NanoUsd; held: NanoUsd }
  | { ok: false; balance: NanoUsd; held: NanoUsd; available: NanoUsd };

export class Reservations {
  constructor(
    private readonly redis: Redis,
    private readonly ks: Keyspace,
    private readonly projection = 'balances',
  ) {}

  private keys(workspaceId: string) {
    return reservationKeys((...p) => this.ks.shared(...p), workspaceId);
  }

  /** Holds `amount` for a request if the workspace's available balance covers it. */
  async reserve(workspaceId: string, requestId: string, amount: NanoUsd, nowMs: number): Promise<ReserveResult> {
    if (amount < 0n) throw new RangeError('a reservation cannot be negative');
    const k = this.keys(workspaceId);
    const [ok, balance, held] = (await this.redis.eval(
      RESERVE,
      4,
      this.ks.active(this.projection),
      k.held,
      k.total,
      k.open,
      this.ks.prefix + `rm:${this.projection}:`,
      workspaceId,
      requestId,
      amount.toString(),
      String(nowMs),
    )) as [number, string, string];
    const b = BigInt(balance);
    const h = BigInt(held);
    return ok === 1 ? { ok: true, balance: b, held: h } : { ok: false, balance: b, held: h, available: b - h };
  }

  /** Drops a reservation whose request never reached the event store (nothing to debit). */
  async release(workspaceId: string, requestId: string): Promise<void> {
    const k = this.keys(workspaceId);
    await this.redis.eval(RELEASE, 3, k.held, k.total, k.open, requestId, `${workspaceId}:${requestId}`);
  }

  async held(workspaceId: string): Promise<NanoUsd> {
    return BigInt((await this.redis.get(this.keys(workspaceId).total)) ?? '0');
  }

  /** Reservations older than `beforeMs`, as [workspaceId, requestId] pairs (for the sweeper). */
  async openBefore(beforeMs: number, limit = 500): Promise<Array<{ workspaceId: string; requestId: string }>> {
    const members = await this.redis.zrangebyscore(this.ks.shared('resv-open'), '-inf', String(beforeMs), 'LIMIT', 0, limit);
    return members.map((m) => {
      const i = m.indexOf(':');
      return { workspaceId: m.slice(0, i), requestId: m.slice(i + 1) };
    });
  }
}
