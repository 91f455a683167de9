import type { Redis } from 'ioredis';
import type { NanoUsd } from '../../platform/money';
import type { PeriodIds } from '../../platform/budget-periods';
import type { Keyspace } from '../../platform/projections/keyspace';
import { defineScript, Script } from '../../platform/projections/scripts';
import { KEY_FIELDS as F, KEY_RECORD_INFIX, KeyIndex, keyRecordOf, KeyRecord } from '../../accounts';
import {
  RESERVATION_KEYS_LUA,
  RESERVE_FUNCTION,
  ReserveReply,
  ReserveResult,
  reserveResultOf,
} from '../../billing';
import { COUNT_BODY, Counted, WINDOW_SECONDS } from './rate-limit';

/**
 * Admission: everything a metered request needs from Redis before generation, in ONE script and
 * one round trip, for every key:
 *
 *   key lookup (the key index's active generation) → expiry (against the caller's clock, ARGV) →
 *   scope → the count in the key's rate-limit window → the reservation (balance, the key's budget
 *   and its creator's member budget, each in its period: RESERVE_FUNCTION, the same text as the
 *   stand-alone reserve).
 *
 * Each step stops the script with its verdict, so nothing after a refusal is written: an unknown,
 * expired or out-of-scope key is not counted, a request over its rate limit holds nothing. The
 * amount is the exact one (the prompt is counted before the script); without an amount (a request
 * whose body is invalid, or which searches the web first) the script stops after the count.
 *
 * Expiry compares ISO strings: the key index stores expiresAt as Date.toISOString() writes it
 * (fixed width, UTC), so string order is time order.
 */
const ADMIT = `${RESERVE_FUNCTION}
${RESERVATION_KEYS_LUA}
local gen = redis.call('GET', KEYS[1]) or '0'
local flat = redis.call('HGETALL', ARGV[1] .. gen .. '${KEY_RECORD_INFIX}' .. ARGV[2])
if #flat == 0 then return {'unknown', flat} end
local h = {}
for i = 1, #flat, 2 do h[flat[i]] = flat[i + 1] end
if (h.${F.expiresAt} or '') ~= '' and h.${F.expiresAt} <= ARGV[3] then return {'expired', flat} end
if not string.find(',' .. (h.${F.scopes} or '') .. ',', ',' .. ARGV[4] .. ',', 1, true) then return {'forbidden', flat} end
local counter, window = ARGV[5] .. h.${F.keyId}, ARGV[6]
${COUNT_BODY}
local limit = tonumber(h.${F.rateLimit} or '') or 0
if limit <= 0 then limit = tonumber(ARGV[7]) end
if consumed > limit then return {'counted', flat, consumed, ttl} end
if ARGV[8] == '' then return {'counted', flat, consumed, ttl} end
local bgen = redis.call('GET', KEYS[2]) or '0'
local periods = {daily = ARGV[13], weekly = ARGV[14], monthly = ARGV[15]}
local r = reserve(ARGV[9] .. bgen, h.${F.workspaceId}, ARGV[11], ARGV[8], ARGV[12], h.${F.keyId}, periods, reservation_keys(ARGV[10], h.${F.workspaceId}))
return {'reserved', flat, consumed, ttl, r}`;

export interface AdmitQuery {
  keyHash: string;
  scope: string;
  now: Date;
  requestId: string;
  /** The exact amount to hold; null: stop after the rate-limit count. */
  amount: NanoUsd | null;
  /** The period ids budgets count in now (periodIdsAt(now)). */
  periods: PeriodIds;
}

export type Admitted =
  | { step: 'unknown' }
  | { step: 'expired'; key: KeyRecord }
  | { step: 'forbidden'; key: KeyRecord }
  /** Counted in its window; `held` when an amount was asked for and the count was within the limit. */
  | { step: 'counted'; key: KeyRecord; counted: Counted; held?: ReserveResult };

export class Admission {
  private readonly script: Script;

  constructor(
    redis: Redis,
    private readonly ks: Keyspace,
    private readonly keys: KeyIndex,
    /** Prefix of the rate-limit counters ("{prefix}rl:inference"). */
    private readonly counterPrefix: string,
    private readonly defaultPerMinute: number,
    private readonly balances = 'balances',
  ) {
    this.script = defineScript(redis, 'tollgateAdmit', 2, ADMIT);
  }

  async admit(q: AdmitQuery): Promise<Admitted> {
    const { activeKey, recordPrefix } = this.keys.location;
    const [step, flat, count, msLeft, reserved] = (await this.script(
      activeKey,
      this.ks.active(this.balances),
      recordPrefix,
      q.keyHash,
      q.now.toISOString(),
      q.scope,
      `${this.counterPrefix}:`,
      WINDOW_SECONDS,
      this.defaultPerMinute,
      q.amount === null ? '' : q.amount.toString(),
      this.ks.prefix + `rm:${this.balances}:`,
      this.ks.prefix,
      q.requestId,
      String(q.now.getTime()),
      q.periods.daily,
      q.periods.weekly,
      q.periods.monthly,
    )) as [string, string[], number?, number?, ReserveReply?];
    const key = keyRecordOf(flat);
    if (step === 'unknown' || !key) return { step: 'unknown' };
    if (step === 'expired') return { step, key };
    if (step === 'forbidden') return { step, key };
    const counted = { count: Number(count), msLeft: Number(msLeft) };
    return reserved ? { step: 'counted', key, counted, held: reserveResultOf(reserved) } : { step: 'counted', key, counted };
  }
}
