import type { Redis } from 'ioredis';
import type { NanoUsd } from '../../../platform/money';
import { Keyspace } from '../../../platform/projections/keyspace';
import { defineScript, Script } from '../../../platform/projections/scripts';

/**
 * Open reservations live outside the projection's generations (they belong to requests in
 * flight, not to history), beside it under shared keys:
 *
 *   resv:{wsId}        hash requestId → reserved nano-USD
 *   resv-total:{wsId}  sum of that hash
 *   resv-open          sorted set "wsId:requestId" scored by reservation time (ms), for the sweeper
 *   resv-key:{wsId}    hash requestId → keyId (the key a reservation counts against)
 *   resv-key-total:{keyId}  sum of that key's open reservations (deleted when it reaches 0)
 *
 * A key's budget and month-to-date spend live in the balances read model (./projection.ts), so the
 * reserve script reads balance, spend and budget from one generation.
 */
export function reservationKeys(shared: (...parts: string[]) => string, workspaceId: string) {
  return {
    held: shared('resv', workspaceId),
    total: shared('resv-total', workspaceId),
    open: shared('resv-open'),
    owner: shared('resv-key', workspaceId),
    /** + keyId */
    keyTotalPrefix: shared('resv-key-total', ''),
  };
}

/**
 * available = balance − open reservations must cover the amount, checked and held in one script.
 * With a key whose budget is set, the key's month-to-date spend + its open reservations + this
 * amount must also stay within the budget: the same script, so parallel requests never overshoot
 * either. All arithmetic is Redis's int64 (INCRBY) and decimal strings: Lua numbers are doubles and
 * would round amounts above 2^53 nano-USD.
 *
 * A Lua function, so that the inference admission script (key lookup, rate limit and this
 * reservation in one round trip: src/inference/routes/admission.ts) and the stand-alone RESERVE
 * below run the same text.
 *
 * reserve(base, wsId, requestId, amount, nowMs, keyId ('' for none), month, k) where base is the
 * balances generation's prefix ("{prefix}rm:balances:{gen}") and k the reservation keys
 * ({held, total, open, owner, keyTotalPrefix}: reservationKeys, or RESERVATION_KEYS_LUA).
 * Returns {1, balance, held} | {0, balance, held} | {2, balance, held, budget, spent, heldByOthers}
 */
export const RESERVE_FUNCTION = `
local function ge(a, b)
  local na, nb = string.sub(a, 1, 1) == '-', string.sub(b, 1, 1) == '-'
  if na ~= nb then return nb end
  if na then a, b = string.sub(b, 2), string.sub(a, 2) end
  if #a ~= #b then return #a > #b end
  return a >= b
end
-- a + b for non-negative decimal strings
local function add(a, b)
  local out, carry, i, j = {}, 0, #a, #b
  while i > 0 or j > 0 or carry > 0 do
    local s = carry + (i > 0 and tonumber(string.sub(a, i, i)) or 0) + (j > 0 and tonumber(string.sub(b, j, j)) or 0)
    table.insert(out, 1, tostring(s % 10))
    carry = math.floor(s / 10)
    i, j = i - 1, j - 1
  end
  local r = string.gsub(table.concat(out), '^0+', '')
  if r == '' then return '0' end
  return r
end
local function reserve(base, wsId, requestId, amount, nowMs, keyId, month, k)
  local balance = redis.call('HGET', base .. ':ws:' .. wsId, 'balance') or '0'
  -- INCRBY's reply reaches Lua as a double: read the exact value back as a string.
  redis.call('INCRBY', k.total, amount)
  local held = redis.call('GET', k.total)
  if not ge(balance, held) then
    redis.call('DECRBY', k.total, amount)
    return {0, balance, redis.call('GET', k.total)}
  end
  if keyId and keyId ~= '' then
    local keyTotal = k.keyTotalPrefix .. keyId
    redis.call('INCRBY', keyTotal, amount)
    local budget = redis.call('GET', base .. ':key-budget:' .. keyId)
    if budget then
      local spent = redis.call('HGET', base .. ':key-spend:' .. keyId, month) or '0'
      local keyHeld = redis.call('GET', keyTotal)
      if not ge(budget, add(spent, keyHeld)) then
        redis.call('DECRBY', keyTotal, amount)
        local others = redis.call('GET', keyTotal)
        if others == '0' then redis.call('DEL', keyTotal) end
        redis.call('DECRBY', k.total, amount)
        return {2, balance, redis.call('GET', k.total), budget, spent, others}
      end
    end
    redis.call('HSET', k.owner, requestId, keyId)
  end
  redis.call('HSET', k.held, requestId, amount)
  redis.call('ZADD', k.open, nowMs, wsId .. ':' .. requestId)
  return {1, balance, held}
end`;

/** reservationKeys in Lua, from the shared prefix (REDIS_PREFIX) and a workspace id: the same names. */
export const RESERVATION_KEYS_LUA = `
local function reservation_keys(prefix, wsId)
  return {
    held = prefix .. 'resv:' .. wsId,
    total = prefix .. 'resv-total:' .. wsId,
    open = prefix .. 'resv-open',
    owner = prefix .. 'resv-key:' .. wsId,
    keyTotalPrefix = prefix .. 'resv-key-total:',
  }
end`;

/**
 * KEYS: 1 balances active generation, 2 resv:{wsId}, 3 resv-total:{wsId}, 4 resv-open
 * ARGV: 1 balances generation prefix, 2 wsId, 3 requestId, 4 amount, 5 now ms,
 *       6 keyId ('' for none), 7 UTC month, 8 resv-key:{wsId}, 9 resv-key-total: prefix
 */
const RESERVE = `${RESERVE_FUNCTION}
local gen = redis.call('GET', KEYS[1]) or '0'
return reserve(ARGV[1] .. gen, ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6], ARGV[7],
  {held = KEYS[2], total = KEYS[3], open = KEYS[4], owner = ARGV[8], keyTotalPrefix = ARGV[9]})`;

/**
 * Frees a request's hold (and its key's share of it). Also what the balances projection runs when it
 * applies the request's TokensDebited, in the same MULTI as the debit and the key's spend.
 * KEYS: resv:{wsId}, resv-total:{wsId}, resv-open; ARGV: requestId, "wsId:requestId",
 * resv-key:{wsId}, resv-key-total: prefix.
 *
 * Idempotent: a second release (sweeper and projector, a replayed debit) frees nothing. The ZREM is
 * outside `if amt` on purpose: whatever state it finds, the request leaves no trace, so an index
 * entry whose hold Redis lost (eviction, a partial restore) is swept once instead of on every sweep.
 */
export const RELEASE = `
local amt = redis.call('HGET', KEYS[1], ARGV[1])
if amt then
  redis.call('HDEL', KEYS[1], ARGV[1])
  redis.call('DECRBY', KEYS[2], amt)
  local keyId = redis.call('HGET', ARGV[3], ARGV[1])
  if keyId then
    redis.call('HDEL', ARGV[3], ARGV[1])
    if redis.call('DECRBY', ARGV[4] .. keyId, amt) <= 0 then redis.call('DEL', ARGV[4] .. keyId) end
  end
end
redis.call('ZREM', KEYS[3], ARGV[2])
return amt`;

/**
 * Settlement without the projector: once a request's completion is recorded, its api process turns
 * the hold (the most it could cost) into the settled cost, pending until the projector applies the
 * request's TokensDebited (whose RELEASE then drops it, as it drops a hold). So available credit =
 * balance − holds − pending, and credit is never held for projector lag: only what was spent stays
 * counted. The same keys as RELEASE, ARGV[5] the settled cost.
 *
 * Idempotent and race-free: nothing happens when the hold is gone (the projector got there first, or
 * the sweeper); run twice, the second run replaces the cost by itself. The request stays in resv-open,
 * so the sweeper's rules (waiting for the projector, dropping a stale entry) are unchanged.
 */
export const TO_PENDING = `
local amt = redis.call('HGET', KEYS[1], ARGV[1])
if not amt then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[5])
redis.call('DECRBY', KEYS[2], amt)
redis.call('INCRBY', KEYS[2], ARGV[5])
local keyId = redis.call('HGET', ARGV[3], ARGV[1])
if keyId then
  redis.call('DECRBY', ARGV[4] .. keyId, amt)
  redis.call('INCRBY', ARGV[4] .. keyId, ARGV[5])
end
return 1`;

/** The script's arguments after `numkeys` for one request's release. */
export function releaseArgs(k: ReturnType<typeof reservationKeys>, workspaceId: string, requestId: string): string[] {
  return [k.held, k.total, k.open, requestId, `${workspaceId}:${requestId}`, k.owner, k.keyTotalPrefix];
}

export type ReserveResult =
  | { ok: true; balance: NanoUsd; held: NanoUsd }
  | { ok: false; balance: NanoUsd; held: NanoUsd; available: NanoUsd; budget?: undefined }
  /** The balance covered it, the key's monthly budget did not. */
  | { ok: false; balance: NanoUsd; held: NanoUsd; available: NanoUsd; budget: { budget: NanoUsd; spent: NanoUsd; heldByOthers: NanoUsd } };

/** What RESERVE_FUNCTION's reserve() returns, as the script's reply. */
export type ReserveReply = [number, string, string, string?, string?, string?];

export function reserveResultOf([ok, balance, held, budget, spent, others]: ReserveReply): ReserveResult {
  const b = BigInt(balance);
  const h = BigInt(held);
  if (Number(ok) === 1) return { ok: true, balance: b, held: h };
  if (Number(ok) === 2) {
    return { ok: false, balance: b, held: h, available: b - h, budget: { budget: BigInt(budget!), spent: BigInt(spent!), heldByOthers: BigInt(others ?? '0') } };
  }
  return { ok: false, balance: b, held: h, available: b - h };
}

/** Counts a reservation against a key (and its budget, if it has one) for a UTC month ("2026-11"). */
export interface ReserveForKey {
  keyId: string;
  month: string;
}

export class Reservations {
  private readonly reserveScript: Script;
  private readonly releaseScript: Script;
  private readonly pendingScript: Script;

  constructor(
    private readonly redis: Redis,
    private readonly ks: Keyspace,
    private readonly projection = 'balances',
  ) {
    this.reserveScript = defineScript(redis, 'tollgateReserve', 4, RESERVE);
    this.releaseScript = defineScript(redis, 'tollgateRelease', 3, RELEASE);
    this.pendingScript = defineScript(redis, 'tollgatePending', 3, TO_PENDING);
  }

  private keys(workspaceId: string) {
    return reservationKeys((...p) => this.ks.shared(...p), workspaceId);
  }

  /** Holds `amount` for a request if the workspace's available balance (and the key's budget) covers it. */
  async reserve(workspaceId: string, requestId: string, amount: NanoUsd, nowMs: number, key?: ReserveForKey): Promise<ReserveResult> {
    if (amount < 0n) throw new RangeError('a reservation cannot be negative');
    const k = this.keys(workspaceId);
    const reply = (await this.reserveScript(
      this.ks.active(this.projection),
      k.held,
      k.total,
      k.open,
      this.ks.prefix + `rm:${this.projection}:`,
      workspaceId,
      requestId,
      amount.toString(),
      String(nowMs),
      key?.keyId ?? '',
      key?.month ?? '',
      k.owner,
      k.keyTotalPrefix,
    )) as ReserveReply;
    return reserveResultOf(reply);
  }

  /** Drops a reservation whose request never reached the event store (nothing to debit). */
  async release(workspaceId: string, requestId: string): Promise<void> {
    await this.releaseScript(...releaseArgs(this.keys(workspaceId), workspaceId, requestId));
  }

  /**
   * The request's completion is recorded: its hold becomes its settled cost, pending until the
   * projector applies the debit (TO_PENDING). False when the hold was already gone.
   */
  async markPending(workspaceId: string, requestId: string, cost: NanoUsd): Promise<boolean> {
    if (cost < 0n) throw new RangeError('a settled cost cannot be negative');
    return (await this.pendingScript(...releaseArgs(this.keys(workspaceId), workspaceId, requestId), cost.toString())) === 1;
  }

  /** The sum of a key's open reservations. */
  async heldByKey(workspaceId: string, keyId: string): Promise<NanoUsd> {
    return BigInt((await this.redis.get(this.keys(workspaceId).keyTotalPrefix + keyId)) ?? '0');
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
