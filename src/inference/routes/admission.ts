import type { Redis } from 'ioredis';
import type { NanoUsd } from '../../platform/money';
import type { PeriodIds } from '../../platform/budget-periods';
import type { Keyspace } from '../../platform/projections/keyspace';
import { ActiveGenerations, type MsClock } from '../../platform/projections/read-models';
import { luaScript } from '../../platform/redis-scripts';
import { KeyIndex, KeyRecord } from '../../accounts';
import { reservationKeys, reserveLua, ReserveReply, ReserveResult, reserveResultOf } from '../../billing';
import { Counted, rateCounterKey, WINDOW_SECONDS } from './rate-limit';

/**
 * Admission: everything a metered request needs from Redis before generation, in two round trips:
 *
 *   1. the key lookup (the key index's record by the secret's hash: KeyIndex.lookupHash, one
 *      HGETALL on the key index's slot), then its expiry (against the caller's clock) and scope;
 *   2. one script on the key's workspace's slot (./admit.lua): the count in the key's rate-limit
 *      window, then the reservation (balance, the key's budget and its creator's member budget,
 *      each in its period: billing's `reserve` include, the same function as the stand-alone
 *      reserve), all atomic.
 *
 * Two trips because on a Redis Cluster the key index (one hash tag, looked up by the secret) and
 * the workspace (its own tag) are on different slots; on one Redis it is the same path. The
 * balances generation the script reads is the caller's (ActiveGenerations: a script on the
 * workspace's slot cannot read the pointer).
 *
 * The rate limit is decided in the script and only there (the key's limit, else the default:
 * `limited`); the headers and the 429 (./rate-limit.ts) show the script's verdict.
 *
 * Each step stops with its verdict, so nothing after a refusal is written: an unknown, expired or
 * out-of-scope key is not counted, a request over its rate limit holds nothing. The amount is the
 * exact one (the prompt is counted before the script); without an amount (a request whose body is
 * invalid, or which searches the web first) the script stops after the count.
 */
const ADMIT = luaScript(
  'inference/routes/admit.lua',
  {
    keys: ['counter', 'balance', 'held', 'open'],
    args: [
      'windowSeconds',
      'limit',
      /** '' : stop after the count. */
      'amount',
      'wsId',
      'keyId',
      'requestId',
      'nowMs',
      'daily',
      'weekly',
      'monthly',
    ],
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
  private readonly gens: ActiveGenerations;

  constructor(
    redis: Redis,
    private readonly ks: Keyspace,
    private readonly keys: KeyIndex,
    /** Prefix of the rate-limit counters ("{prefix}rl:inference"). */
    private readonly counterPrefix: string,
    private readonly defaultPerMinute: number,
    /** The process's clock (Services.now), which the generation cache ages on. */
    now: MsClock = Date.now,
    private readonly balances = 'balances',
  ) {
    this.script = ADMIT.bind(redis, 'tollgateAdmit');
    this.gens = new ActiveGenerations(redis, ks, now);
  }

  async admit(q: AdmitQuery): Promise<Admitted> {
    const key = await this.keys.lookupHash(q.keyHash);
    if (!key) return { step: 'unknown' };
    if (key.expiresAt && key.expiresAt.getTime() <= q.now.getTime()) return { step: 'expired', key };
    if (!key.scopes.includes(q.scope)) return { step: 'forbidden', key };
    const r = reservationKeys((...p) => this.ks.shared(...p), key.workspaceId);
    const gen = await this.gens.get(this.balances);
    const [step, count, msLeft, limit, reserved] = (await this.script(
      {
        counter: rateCounterKey(this.counterPrefix, key.workspaceId, key.keyId),
        balance: this.ks.rmWs(this.balances, gen, key.workspaceId),
        held: r.held,
        open: r.open,
      },
      {
        windowSeconds: WINDOW_SECONDS,
        limit: key.rateLimit && key.rateLimit > 0 ? key.rateLimit : this.defaultPerMinute,
        amount: q.amount === null ? '' : q.amount.toString(),
        wsId: key.workspaceId,
        keyId: key.keyId,
        requestId: q.requestId,
        nowMs: String(q.now.getTime()),
        daily: q.periods.daily,
        weekly: q.periods.weekly,
        monthly: q.periods.monthly,
      },
    )) as [string, number, number, number, ReserveReply?];
    const counted = { count: Number(count), msLeft: Number(msLeft), limit: Number(limit), allowed: step !== 'limited' };
    return reserved ? { step: 'counted', key, counted, held: reserveResultOf(reserved) } : { step: 'counted', key, counted };
  }
}
