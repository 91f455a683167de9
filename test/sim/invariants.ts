import type { RecordedEvent } from '../../src/platform/eventstore/port';
import type { ChargeMade } from './ports';
import { SimFailure } from './world';

/**
 * The invariants, checked against an independent fold of the event log (never against the read
 * models the code under test maintains), and against what the callers and the card network saw.
 */

export interface Attempt {
  op: number;
  attempt: number;
  streaming: boolean;
  idempotencyKey: string | null;
  /** 'ok' (a 200 to its end), 'replayed' (a 200 with Idempotent-Replayed), 'error' (another status), 'gave_up', 'reset'. */
  outcome: 'pending' | 'ok' | 'replayed' | 'error' | 'gave_up' | 'reset';
  status?: number;
  requestId?: string;
  /** Text the caller received (a non-streaming caller receives text only with a 200). */
  received: string;
  /** Redis lost data (flush, rollback) while this attempt ran: the idempotency record may be gone. */
  redisLost: boolean;
  /** Simulated ms when the attempt was sent and when it ended. */
  startedAt: number;
  endedAt?: number;
}

export interface Fold {
  balance: Map<string, bigint>;
  debits: Map<string, RecordedEvent[]>;
  requested: Map<string, RecordedEvent>;
  byClientId: Map<string, RecordedEvent>;
}

export function fold(events: readonly RecordedEvent[]): Fold {
  const f: Fold = { balance: new Map(), debits: new Map(), requested: new Map(), byClientId: new Map() };
  const add = (ws: string, d: bigint) => f.balance.set(ws, (f.balance.get(ws) ?? 0n) + d);
  for (const e of events) {
    const d = e.data as Record<string, string>;
    switch (e.type) {
      case 'DepositSucceeded':
      case 'AutoReloadSucceeded':
        add(d.workspaceId, BigInt(d.amountNanoUsd));
        break;
      case 'TokensDebited': {
        add(d.workspaceId, -BigInt(d.amountNanoUsd));
        const list = f.debits.get(d.requestId) ?? [];
        list.push(e);
        f.debits.set(d.requestId, list);
        break;
      }
      case 'InferenceRequested':
        f.requested.set(d.requestId, e);
        if (typeof e.metadata.clientRequestId === 'string') f.byClientId.set(e.metadata.clientRequestId, e);
        break;
    }
  }
  return f;
}

/** Safety, after every step. */
export function checkSafety(events: readonly RecordedEvent[], charges: readonly ChargeMade[]): Fold {
  const f = fold(events);
  for (const [ws, b] of f.balance) {
    if (b < 0n)
      throw new SimFailure(
        'served-past-balance',
        `workspace ${ws} is at ${b} nano-USD in the ledger: it was served past its balance and holds`,
      );
  }
  for (const [rid, list] of f.debits) {
    if (list.length > 1) throw new SimFailure('debited-at-most-once', `request ${rid} has ${list.length} TokensDebited`);
  }
  const perLedger = new Map<string, number>();
  for (const c of charges) perLedger.set(c.metadata.ledger_id, (perLedger.get(c.metadata.ledger_id) ?? 0) + 1);
  for (const [id, n] of perLedger) if (n > 1) throw new SimFailure('charged-once-per-trigger', `${n} card charges for ledger entry ${id}`);
  // A deposit retried with its Idempotency-Key (the callers' deposits carry it as their correlation id) is one deposit.
  const depositsPerKey = new Map<string, number>();
  const failedEntries = new Set<string>();
  for (const e of events) {
    if (e.type === 'DepositRequested') {
      const c = String(e.metadata.correlationId);
      depositsPerKey.set(c, (depositsPerKey.get(c) ?? 0) + 1);
      if (depositsPerKey.get(c)! > 1)
        throw new SimFailure('one-deposit-per-idempotency-key', `${depositsPerKey.get(c)} deposits requested for the retries of ${c}`);
    }
    if (e.type === 'DepositFailed' || e.type === 'AutoReloadFailed') {
      const d = e.data as { depositId?: string; reloadId?: string };
      failedEntries.add(d.depositId ?? d.reloadId!);
    }
  }
  // The card network's word against the ledger's: money taken for an entry the ledger says failed is lost to the customer.
  for (const c of charges)
    if (c.status === 'succeeded' && failedEntries.has(c.metadata.ledger_id))
      throw new SimFailure(
        'no-charge-for-a-failed-entry',
        `the card was charged for ${c.metadata.ledger_id}, which the ledger records as failed`,
      );
  const settled = new Map<string, number>();
  for (const e of events) {
    if (e.type !== 'DepositSucceeded' && e.type !== 'AutoReloadSucceeded') continue;
    const d = e.data as { depositId?: string; reloadId?: string };
    const id = d.depositId ?? d.reloadId!;
    settled.set(id, (settled.get(id) ?? 0) + 1);
    if (settled.get(id)! > 1) throw new SimFailure('credited-once', `${e.type} twice for ${id}`);
    if (!charges.some((c) => c.metadata.ledger_id === id && c.status === 'succeeded')) {
      throw new SimFailure('ledger-matches-charges', `${e.type} for ${id} without a successful card charge`);
    }
  }
  return f;
}

/** What callers were billed against what they got (after the schedule, when every attempt ended). */
export function checkCallers(f: Fold, attempts: readonly Attempt[], events: readonly RecordedEvent[], sweeperMinAgeMs: number): void {
  const byOp = new Map<number, Attempt[]>();
  for (const a of attempts) byOp.set(a.op, [...(byOp.get(a.op) ?? []), a]);
  const finish = new Map<string, string>();
  for (const e of events)
    if (e.type === 'InferenceCompleted')
      finish.set((e.data as { requestId: string }).requestId, (e.data as { finishReason: string }).finishReason);
  for (const a of attempts) {
    const req = f.byClientId.get(`op${a.op}-a${a.attempt}`);
    if (!req || a.streaming) continue;
    const rid = (req.data as { requestId: string }).requestId;
    const debit = f.debits.get(rid)?.[0];
    if (!debit) continue;
    const out = (debit.data as { outputTokens: number }).outputTokens;
    // A request answered (200) well within the sweeper's age was live all along: the sweeper must not have closed it.
    if (a.outcome === 'ok' && finish.get(rid) === 'abandoned' && (a.endedAt ?? Infinity) - a.startedAt < sweeperMinAgeMs) {
      throw new SimFailure(
        'sweeper-leaves-live-requests',
        `op ${a.op} attempt ${a.attempt} got its answer after ${(a.endedAt ?? 0) - a.startedAt} ms, yet request ${rid} was closed as abandoned`,
      );
    }
    // A non-streaming caller receives text only with the whole answer: one that left got none.
    if (out > 0 && finish.get(rid) === 'client_disconnected') {
      throw new SimFailure(
        'billed-only-what-was-received',
        `op ${a.op} attempt ${a.attempt} (non-streaming, ${a.outcome}${a.idempotencyKey ? ', with Idempotency-Key' : ''}) left before its answer, yet request ${rid} was billed ${out} output tokens`,
      );
    }
  }
  for (const [op, list] of byOp) {
    const key = list[0].idempotencyKey;
    if (!key || list[0].streaming || list.some((a) => a.redisLost)) continue;
    const billed = list
      .map((a) => f.byClientId.get(`op${a.op}-a${a.attempt}`))
      .filter((r): r is RecordedEvent => !!r)
      .map((r) => f.debits.get((r.data as { requestId: string }).requestId)?.[0])
      .filter((d): d is RecordedEvent => !!d && BigInt((d.data as { amountNanoUsd: string }).amountNanoUsd) > 0n);
    if (billed.length > 1) {
      throw new SimFailure(
        'idempotent-retry-not-billed-again',
        `op ${op} (Idempotency-Key ${key}) was billed ${billed.length} times over ${list.length} attempts: ${list.map((a) => a.outcome).join(', ')}`,
      );
    }
  }
}

/** Liveness, once faults stopped and everything settled: requests closed, no hold left, read models equal the fold. */
export async function checkLiveness(
  f: Fold,
  events: readonly RecordedEvent[],
  holds: { open(): Promise<string[]>; held(ws: string): Promise<bigint> },
  readBalance: (ws: string) => Promise<bigint>,
  redisLost: boolean,
): Promise<void> {
  for (const [rid] of f.requested) {
    if (f.debits.has(rid)) continue;
    // Known and not fixed yet: the sweeper finds abandoned requests only through Redis (resv-open),
    // so one whose process died is never closed once Redis lost its data (docs/TESTING.md).
    if (redisLost)
      throw new SimFailure(
        'known:open-after-redis-loss',
        `request ${rid} has no TokensDebited: its process died and Redis lost its reservation`,
      );
    throw new SimFailure('every-request-closed', `request ${rid} has no TokensDebited after the faults stopped`);
  }
  // Through the reservations' own reads (not their key names): nothing held, nothing open.
  const open = await holds.open();
  if (open.length) throw new SimFailure('no-hold-left', `reservations still open: ${open.slice(0, 5).join(', ')}`);
  for (const ws of f.balance.keys()) {
    const held = await holds.held(ws);
    if (held !== 0n) throw new SimFailure('no-hold-left', `workspace ${ws} still holds ${held} nano-USD`);
  }
  for (const [ws, b] of f.balance) {
    const projected = await readBalance(ws);
    if (projected !== b)
      throw new SimFailure('balance-equals-ledger', `workspace ${ws}: read model says ${projected}, the event log folds to ${b}`);
  }
  void events;
}
