import type { Redis } from 'ioredis';
import type { NanoUsd } from '../../../platform/money';
import type { PeriodIds } from '../../../platform/budget-periods';
import { Keyspace } from '../../../platform/projections/keyspace';
import { globEscape } from '../../../platform/projections/generations';
import { ActiveGenerations, type MsClock } from '../../../platform/projections/read-models';
import { scanAll } from '../../../platform/redis';
import { HELD_TOTAL, heldByKeyField, heldByMemberField, releaseCall, reservationKeys } from './reservation-keys';
import { RELEASE, RESERVE, TO_PENDING } from './reservation-scripts';
import { reserveResultOf, type ReserveReply, type ReserveResult } from './reserve-result';

/**
 * Holds on a workspace's balance (and its keys' and members' budgets) for requests in flight: the
 * reserve, release and settle scripts (./reservation-scripts.ts) on the keys of ./reservation-keys.ts,
 * and the reads the sweeper and the answers make.
 */
/** Counts a reservation against a key (its budget, and its creator's) in the periods `periods` names. */
export interface ReserveForKey {
  keyId: string;
  periods: PeriodIds;
}

export class Reservations {
  private readonly reserveScript: ReturnType<typeof RESERVE.bind>;
  private readonly releaseScript: ReturnType<typeof RELEASE.bind>;
  private readonly pendingScript: ReturnType<typeof TO_PENDING.bind>;
  private readonly gens: ActiveGenerations;

  constructor(
    private readonly redis: Redis,
    private readonly ks: Keyspace,
    /** The process's clock (Services.now), which the generation cache ages on. */
    now: MsClock = Date.now,
    private readonly projection = 'balances',
  ) {
    this.gens = new ActiveGenerations(redis, ks, now);
    this.reserveScript = RESERVE.bind(redis, 'tollgateReserve');
    this.releaseScript = RELEASE.bind(redis, 'tollgateRelease');
    this.pendingScript = TO_PENDING.bind(redis, 'tollgatePending');
  }

  private keys(workspaceId: string) {
    return reservationKeys((...p) => this.ks.shared(...p), workspaceId);
  }

  /** Holds `amount` for a request if the workspace's available balance (and the key's budget) covers it. */
  async reserve(workspaceId: string, requestId: string, amount: NanoUsd, nowMs: number, key?: ReserveForKey): Promise<ReserveResult> {
    if (amount < 0n) throw new RangeError('a reservation cannot be negative');
    const k = this.keys(workspaceId);
    const reply = (await this.reserveScript(
      { balance: this.ks.rmWs(this.projection, await this.gens.get(this.projection), workspaceId), held: k.held, open: k.open },
      {
        wsId: workspaceId,
        requestId,
        amount: amount.toString(),
        nowMs: String(nowMs),
        keyId: key?.keyId ?? '',
        daily: key?.periods.daily ?? '',
        weekly: key?.periods.weekly ?? '',
        monthly: key?.periods.monthly ?? '',
      },
    )) as ReserveReply;
    return reserveResultOf(reply);
  }

  /** Drops a reservation whose request never reached the event store (nothing to debit). */
  async release(workspaceId: string, requestId: string): Promise<void> {
    const { keys, args } = releaseCall(this.keys(workspaceId), workspaceId, requestId);
    await this.releaseScript(keys, args);
  }

  /**
   * The request's completion is recorded: its hold becomes its settled cost, pending until the
   * projector applies the debit (TO_PENDING). False when the hold was already gone.
   */
  async markPending(workspaceId: string, requestId: string, cost: NanoUsd): Promise<boolean> {
    if (cost < 0n) throw new RangeError('a settled cost cannot be negative');
    const { keys, args } = releaseCall(this.keys(workspaceId), workspaceId, requestId);
    return (await this.pendingScript(keys, { ...args, cost: cost.toString() })) === 1;
  }

  /** The sum of the open reservations of a member's keys. */
  async heldByMember(workspaceId: string, userId: string): Promise<NanoUsd> {
    return BigInt((await this.redis.hget(this.keys(workspaceId).held, heldByMemberField(userId))) ?? '0');
  }

  /** The sum of a key's open reservations. */
  async heldByKey(workspaceId: string, keyId: string): Promise<NanoUsd> {
    return BigInt((await this.redis.hget(this.keys(workspaceId).held, heldByKeyField(keyId))) ?? '0');
  }

  async held(workspaceId: string): Promise<NanoUsd> {
    return BigInt((await this.redis.hget(this.keys(workspaceId).held, HELD_TOTAL)) ?? '0');
  }

  /**
   * Reservations older than `beforeMs`, as [workspaceId, requestId] pairs (for the sweeper): each
   * workspace's index (resv-open:{ws:<id>}) found by a SCAN of every primary. Not on a request path.
   */
  async openBefore(beforeMs: number, limit = 500): Promise<Array<{ workspaceId: string; requestId: string }>> {
    const out: Array<{ workspaceId: string; requestId: string }> = [];
    for (const index of await this.openIndexes()) {
      if (out.length >= limit) break;
      const members = await this.redis.zrangebyscore(index, '-inf', String(beforeMs), 'LIMIT', 0, limit - out.length);
      for (const m of members) {
        const i = m.indexOf(':');
        out.push({ workspaceId: m.slice(0, i), requestId: m.slice(i + 1) });
      }
    }
    return out;
  }

  /** Every workspace's index of open reservations. */
  private async openIndexes(): Promise<string[]> {
    const found: string[] = [];
    const head = reservationKeys((...p) => this.ks.shared(...p), '').open.replace(/\{ws:\}$/, '');
    await scanAll(this.redis, `${globEscape(head)}{ws:*`, async (_, keys) => void found.push(...keys));
    return found;
  }
}
