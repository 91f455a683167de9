import type { Redis } from 'ioredis';
import type { NanoUsd } from '../../platform/money';
import type { PeriodIds } from '../../platform/budget-periods';
import type { Keyspace } from '../../platform/projections/keyspace';
import { luaScript } from '../../platform/redis-scripts';
import { KEY_FIELDS as F, KEY_RECORD_INFIX, KeyIndex, keyRecordOf, KeyRecord } from '../../accounts';
import { reserveLua, ReserveReply, ReserveResult, reserveResultOf } from '../../billing';
import { Counted, WINDOW_SECONDS } from './rate-limit';

/**
 * Admission: everything a metered request needs from Redis before generation, in ONE script and
 * one round trip, for every key:
 *
 *   key lookup (the key index's active generation) → expiry (against the caller's clock, ARGV) →
 *   scope → the count in the key's rate-limit window → the reservation (balance, the key's budget
 *   and its creator's member budget, each in its period: billing's `reserve` include, the same
 *   function as the stand-alone reserve).
 *
 * The rate limit is decided there and only there (the key's limit, else the default: `limited`);
 * the headers and the 429 (./rate-limit.ts) show the script's verdict.
 *
 * Each step stops the script with its verdict, so nothing after a refusal is written: an unknown,
 * expired or out-of-scope key is not counted, a request over its rate limit holds nothing. The
 * amount is the exact one (the prompt is counted before the script); without an amount (a request
 * whose body is invalid, or which searches the web first) the script stops after the count.
 *
 * Expiry compares ISO strings: the key index stores expiresAt as Date.toISOString() writes it
 * (fixed width, UTC), so string order is time order.
 */
const ADMIT = luaScript(
  'inference/routes/admit.lua',
  {
    keys: ['keyIndexActive', 'balancesActive'],
    args: [
      'recordPrefix',
      'keyHash',
      'nowIso',
      'scope',
      'counterPrefix',
      'windowSeconds',
      'defaultPerMinute',
      /** '' : stop after the count. */
      'amount',
      'balancesPrefix',
      'sharedPrefix',
      'requestId',
      'nowMs',
      'daily',
      'weekly',
      'monthly',
    ],
    constants: {
      recordInfix: KEY_RECORD_INFIX,
      fieldKeyId: F.keyId,
      fieldWorkspaceId: F.workspaceId,
      fieldScopes: F.scopes,
      fieldExpiresAt: F.expiresAt,
      fieldRateLimit: F.rateLimit,
    },
  },
  [reserveLua],
);

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
  /**
   * Counted in its window (`counted.allowed`: within the key's limit, the script's verdict); `held`
   * when an amount was asked for and the count was within the limit.
   */
  | { step: 'counted'; key: KeyRecord; counted: Counted; held?: ReserveResult };

export class Admission {
  private readonly script: ReturnType<typeof ADMIT.bind>;

  constructor(
    redis: Redis,
    private readonly ks: Keyspace,
    private readonly keys: KeyIndex,
    /** Prefix of the rate-limit counters ("{prefix}rl:inference"). */
    private readonly counterPrefix: string,
    private readonly defaultPerMinute: number,
    private readonly balances = 'balances',
  ) {
    this.script = ADMIT.bind(redis, 'tollgateAdmit');
  }

  async admit(q: AdmitQuery): Promise<Admitted> {
    const { activeKey, recordPrefix } = this.keys.location;
    const [step, flat, count, msLeft, limit, reserved] = (await this.script(
      { keyIndexActive: activeKey, balancesActive: this.ks.active(this.balances) },
      {
        recordPrefix,
        keyHash: q.keyHash,
        nowIso: q.now.toISOString(),
        scope: q.scope,
        counterPrefix: `${this.counterPrefix}:`,
        windowSeconds: WINDOW_SECONDS,
        defaultPerMinute: this.defaultPerMinute,
        amount: q.amount === null ? '' : q.amount.toString(),
        balancesPrefix: this.ks.prefix + `rm:${this.balances}:`,
        sharedPrefix: this.ks.prefix,
        requestId: q.requestId,
        nowMs: String(q.now.getTime()),
        daily: q.periods.daily,
        weekly: q.periods.weekly,
        monthly: q.periods.monthly,
      },
    )) as [string, string[], number?, number?, number?, ReserveReply?];
    const key = keyRecordOf(flat);
    if (step === 'unknown' || !key) return { step: 'unknown' };
    if (step === 'expired') return { step, key };
    if (step === 'forbidden') return { step, key };
    const counted = { count: Number(count), msLeft: Number(msLeft), limit: Number(limit), allowed: step !== 'limited' };
    return reserved ? { step: 'counted', key, counted, held: reserveResultOf(reserved) } : { step: 'counted', key, counted };
  }
}
