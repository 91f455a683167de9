import type { Redis } from 'ioredis';
import type { NanoUsd } from '../../../platform/money';
import { DEFAULT_BUDGET_PERIOD, isBudgetPeriod, type BudgetPeriod, type PeriodIds } from '../../../platform/budget-periods';
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
 *   resv-member:{wsId} hash requestId → userId (who created the key: the member budget it counts against)
 *   resv-member-total:{wsId}:{userId}  sum of that member's open reservations (deleted at 0)
 *
 * Budgets, key owners and spend per period live in the balances read model (./projection.ts), so
 * the reserve script reads balance, spend and budgets from one generation.
 */
export function reservationKeys(shared: (...parts: string[]) => string, workspaceId: string) {
  return {
    held: shared('resv', workspaceId),
    total: shared('resv-total', workspaceId),
    open: shared('resv-open'),
    owner: shared('resv-key', workspaceId),
    /** + keyId */
    keyTotalPrefix: shared('resv-key-total', ''),
    member: shared('resv-member', workspaceId),
    /** + userId */
    memberTotalPrefix: shared('resv-member-total', workspaceId, ''),
  };
}

/**
 * available = balance − open reservations must cover the amount, checked and held in one script.
 * Then every budget the request counts against, in the same script, so parallel requests never
 * overshoot any of them: the key's (its spend in the key's period + its open reservations + this
 * amount), then its creator's member budget (the spend of all their keys in the member budget's
 * period + their open reservations + this amount). A refusal undoes every hold it made. All
 * arithmetic is Redis's int64 (INCRBY) and decimal strings: Lua numbers are doubles and would round
 * amounts above 2^53 nano-USD.
 *
 * A Lua function, so that the inference admission script (key lookup, rate limit and this
 * reservation in one round trip: src/inference/routes/admission.ts) and the stand-alone RESERVE
 * below run the same text.
 *
 * reserve(base, wsId, requestId, amount, nowMs, keyId ('' for none), periods, k) where base is the
 * balances generation's prefix ("{prefix}rm:balances:{gen}"), periods the id of each period now
 * ({daily, weekly, monthly}: src/platform/budget-periods.ts) and k the reservation keys
 * (reservationKeys, or RESERVATION_KEYS_LUA).
 * Returns {1, balance, held} | {0, balance, held}
 *       | {2, balance, held, budget, spent, heldByOthers, period}          (the key's budget refused)
 *       | {3, balance, held, budget, spent, heldByOthers, period, userId}  (the member's budget refused)
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
local function unhold(key, amount)
  if redis.call('DECRBY', key, amount) <= 0 then redis.call('DEL', key) end
end
-- nil when spend in the budget's period + holds (this one's included) fit the budget, else {budget, spent, period}
local function over_budget(budgetKey, periodKey, spendKey, heldKey, periods)
  local budget = redis.call('GET', budgetKey)
  if not budget then return nil end
  local period = redis.call('GET', periodKey) or 'monthly'
  local spent = redis.call('HGET', spendKey, periods[period] or periods.monthly) or '0'
  if ge(budget, add(spent, redis.call('GET', heldKey) or '0')) then return nil end
  return {budget, spent, period}
end
local function reserve(base, wsId, requestId, amount, nowMs, keyId, periods, k)
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
    local kb = base .. ':key-budget'
    local refused = over_budget(kb .. ':' .. keyId, kb .. '-period:' .. keyId, base .. ':key-spend:' .. keyId, keyTotal, periods)
    if refused then
      unhold(keyTotal, amount)
      redis.call('DECRBY', k.total, amount)
      return {2, balance, redis.call('GET', k.total), refused[1], refused[2], redis.call('GET', keyTotal) or '0', refused[3]}
    end
    local owner = redis.call('GET', base .. ':key-owner:' .. keyId)
    if owner then
      local memberTotal = k.memberTotalPrefix .. owner
      redis.call('INCRBY', memberTotal, amount)
      local m = wsId .. ':' .. owner
      refused = over_budget(base .. ':member-budget:' .. m, base .. ':member-budget-period:' .. m, base .. ':member-spend:' .. m, memberTotal, periods)
      if refused then
        unhold(memberTotal, amount)
        unhold(keyTotal, amount)
        redis.call('DECRBY', k.total, amount)
        return {3, balance, redis.call('GET', k.total), refused[1], refused[2], redis.call('GET', memberTotal) or '0', refused[3], owner}
      end
      redis.call('HSET', k.member, requestId, owner)
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
    member = prefix .. 'resv-member:' .. wsId,
    memberTotalPrefix = prefix .. 'resv-member-total:' .. wsId .. ':',
  }
end`;

/**
 * KEYS: 1 balances active generation, 2 resv:{wsId}, 3 resv-total:{wsId}, 4 resv-open
 * ARGV: 1 balances generation prefix, 2 wsId, 3 requestId, 4 amount, 5 now ms,
 *       6 keyId ('' for none), 7-9 the daily, weekly and monthly period ids, 10 resv-key:{wsId},
 *       11 resv-key-total: prefix, 12 resv-member:{wsId}, 13 resv-member-total:{wsId}: prefix
 */
const RESERVE = `${RESERVE_FUNCTION}
local gen = redis.call('GET', KEYS[1]) or '0'
return reserve(ARGV[1] .. gen, ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6], {daily = ARGV[7], weekly = ARGV[8], monthly = ARGV[9]},
  {held = KEYS[2], total = KEYS[3], open = KEYS[4], owner = ARGV[10], keyTotalPrefix = ARGV[11], member = ARGV[12], memberTotalPrefix = ARGV[13]})`;

/**
 * Frees a request's hold (and its key's and member's shares of it). Also what the balances
 * projection runs when it applies the request's TokensDebited, in the same MULTI as the debit and
 * the spend counters.
 * KEYS: resv:{wsId}, resv-total:{wsId}, resv-open; ARGV: requestId, "wsId:requestId",
 * resv-key:{wsId}, resv-key-total: prefix, resv-member:{wsId}, resv-member-total:{wsId}: prefix.
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
  for _, share in ipairs({{ARGV[3], ARGV[4]}, {ARGV[5], ARGV[6]}}) do
    local who = redis.call('HGET', share[1], ARGV[1])
    if who then
      redis.call('HDEL', share[1], ARGV[1])
      if redis.call('DECRBY', share[2] .. who, amt) <= 0 then redis.call('DEL', share[2] .. who) end
    end
  end
end
redis.call('ZREM', KEYS[3], ARGV[2])
return amt`;

/**
 * Settlement without the projector: once a request's completion is recorded, its api process turns
 * the hold (the most it could cost) into the settled cost, pending until the projector applies the
 * request's TokensDebited (whose RELEASE then drops it, as it drops a hold). So available credit =
 * balance − holds − pending, and credit is never held for projector lag: only what was spent stays
 * counted, against the balance and the budgets alike. The same keys as RELEASE, ARGV[7] the settled cost.
 *
 * Idempotent and race-free: nothing happens when the hold is gone (the projector got there first, or
 * the sweeper); run twice, the second run replaces the cost by itself. The request stays in resv-open,
 * so the sweeper's rules (waiting for the projector, dropping a stale entry) are unchanged.
 */
export const TO_PENDING = `
local amt = redis.call('HGET', KEYS[1], ARGV[1])
if not amt then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[7])
redis.call('DECRBY', KEYS[2], amt)
redis.call('INCRBY', KEYS[2], ARGV[7])
for _, share in ipairs({{ARGV[3], ARGV[4]}, {ARGV[5], ARGV[6]}}) do
  local who = redis.call('HGET', share[1], ARGV[1])
  if who then
    redis.call('DECRBY', share[2] .. who, amt)
    redis.call('INCRBY', share[2] .. who, ARGV[7])
  end
end
return 1`;

/** The script's arguments after `numkeys` for one request's release. */
export function releaseArgs(k: ReturnType<typeof reservationKeys>, workspaceId: string, requestId: string): string[] {
  return [k.held, k.total, k.open, requestId, `${workspaceId}:${requestId}`, k.owner, k.keyTotalPrefix, k.member, k.memberTotalPrefix];
}

/** The budget that refused a request the balance covered: the key's own, or its creator's member budget. */
export interface BudgetRefused {
  scope: 'key' | 'member';
  budget: NanoUsd;
  period: BudgetPeriod;
  /** Spent in the budget's current period (debits the projector applied). */
  spent: NanoUsd;
  /** Held by the key's (or member's) other requests in flight. */
  heldByOthers: NanoUsd;
  /** The member, for a member budget. */
  userId?: string;
}

export type ReserveResult =
  | { ok: true; balance: NanoUsd; held: NanoUsd }
  | { ok: false; balance: NanoUsd; held: NanoUsd; available: NanoUsd; budget?: undefined }
  /** The balance covered it, a budget did not. */
  | { ok: false; balance: NanoUsd; held: NanoUsd; available: NanoUsd; budget: BudgetRefused };

/** What RESERVE_FUNCTION's reserve() returns, as the script's reply. */
export type ReserveReply = [number, string, string, string?, string?, string?, string?, string?];

export function reserveResultOf([ok, balance, held, budget, spent, others, period, userId]: ReserveReply): ReserveResult {
  const b = BigInt(balance);
  const h = BigInt(held);
  const verdict = Number(ok);
  if (verdict === 1) return { ok: true, balance: b, held: h };
  if (verdict === 2 || verdict === 3) {
    const refused: BudgetRefused = {
      scope: verdict === 2 ? 'key' : 'member',
      budget: BigInt(budget!),
      period: isBudgetPeriod(period) ? period : DEFAULT_BUDGET_PERIOD,
      spent: BigInt(spent!),
      heldByOthers: BigInt(others ?? '0'),
      ...(verdict === 3 && userId ? { userId } : {}),
    };
    return { ok: false, balance: b, held: h, available: b - h, budget: refused };
  }
  return { ok: false, balance: b, held: h, available: b - h };
}

/** Counts a reservation against a key (its budget, and its creator's) in the periods `periods` names. */
export interface ReserveForKey {
  keyId: string;
  periods: PeriodIds;
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
      key?.periods.daily ?? '',
      key?.periods.weekly ?? '',
      key?.periods.monthly ?? '',
      k.owner,
      k.keyTotalPrefix,
      k.member,
      k.memberTotalPrefix,
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

  /** The sum of the open reservations of a member's keys. */
  async heldByMember(workspaceId: string, userId: string): Promise<NanoUsd> {
    return BigInt((await this.redis.get(this.keys(workspaceId).memberTotalPrefix + userId)) ?? '0');
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
