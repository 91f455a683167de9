import type { ChargeOutcome } from '../commands';
import { billingDecider, decide } from '../decide';
import { idempotencyKeys, reloadEventId, reloadIdFor } from '../ids';
import { reloadBlocker } from '../rules';
import { evolveDecided } from '../evolve';
import type { ReloadRecord } from '../state';
import { formatUsd } from '../../platform/money';
import { streams } from '../../platform/streams';
import { handleCommand, loadState } from '../../platform/eventstore/command-handler';
import type { EventMetadata, EventStore } from '../../platform/eventstore/port';
import type { Logger } from '../../platform/log';
import type { PaymentGateway } from '../payments/port';
import { GatewayUnavailable } from '../payments/port';
import { chargeOnce } from './charge-once';
import { getBalance } from '../projections/balances/queries';
import type { ProjectionProgress } from '../../platform/projections/progress';
import type { ReadModels } from '../../platform/projections/read-models';

/**
 * One auto-reload charge, a billing use case that the BullMQ worker (../workers/auto-reload) runs
 * for each job. The reactor only enqueues; this decides from the ledger:
 *
 *   1. read billing-{wsId}; a reload already in flight (triggered, no outcome) is finished first;
 *   2. otherwise, once the projections have applied that stream, read the projected balance and
 *      decide; append AutoReloadTriggered with exactly the revision read (one winner; the reload id
 *      is derived from that revision, so racing workers agree on it);
 *   3. charge off-session with the idempotency key `reload-{reloadId}`, the amount and the card
 *      on file at the trigger: a retry after a crash or a lost answer gets Stripe's first answer;
 *   4. append AutoReloadSucceeded, or AutoReloadFailed + AutoReloadSuspended (a decline or a card
 *      that needs authentication: no retry storm). An unknown outcome (network, 5xx) throws, and
 *      BullMQ retries the job, which resumes at step 3.
 *
 * Jobs are at least once; this is idempotent through the ledger, not through the job id.
 */

/**
 * Steps where a test can stop the process (the kill test SIGKILLs the worker at each of them):
 * start (read, nothing written), before-trigger, after-trigger (nothing charged yet),
 * after-charge (charged, outcome not written), after-outcome (written, job not completed).
 */
export type ReloadStep = 'start' | 'before-trigger' | 'after-trigger' | 'after-charge' | 'after-outcome';

export interface ReloadHooks {
  step?(step: ReloadStep, info: { workspaceId: string; reloadId?: string }): Promise<void> | void;
}

export interface ReloadDeps {
  store: EventStore;
  readModels: ReadModels;
  progress: ProjectionProgress;
  gateway: PaymentGateway;
  now: () => Date;
  log: Logger;
  /** How long to wait for the projections to reach the billing stream before giving up (the job retries). */
  projectionWaitMs?: number;
  /** A reload in flight for longer than this is not charged again: Stripe forgets idempotency keys after 24 hours. */
  staleAfterMs?: number;
}

export type ReloadResult =
  | { action: 'skipped'; reason: string }
  /** JSON-safe: BullMQ stores it as the job's return value (a bigint would fail the job). */
  | { action: 'succeeded' | 'failed'; reloadId: string; amountNanoUsd: string; code?: string };

const META = (reloadId: string, cause?: string): EventMetadata => ({
  actor: 'worker:auto-reload',
  correlationId: reloadId,
  ...(cause ? { causationId: cause } : {}),
});

/** What the trigger step found: a reload in flight to finish, one just triggered, or why none is due. */
type Found =
  | { kind: 'in_flight'; reload: ReloadRecord }
  | { kind: 'triggered'; reloadId: string; amount: bigint; balance: bigint }
  | { kind: 'skipped'; reason: string };

const triggeredId = (r: Found) => (r.kind === 'triggered' ? r.reloadId : '');

/** One pass of the auto-reload decision and charge for a workspace. Safe to run any number of times. */
export async function chargeAutoReload(
  d: ReloadDeps,
  workspaceId: string,
  opts: { hooks?: ReloadHooks; cause?: string } = {},
): Promise<ReloadResult> {
  const step = async (s: ReloadStep, reloadId?: string) => opts.hooks?.step?.(s, { workspaceId, reloadId });
  const stream = streams.billing(workspaceId);
  let first = true;
  const found = await handleCommand(
    d.store,
    stream,
    billingDecider,
    async (state, { revision, head }): Promise<{ events: ReturnType<typeof decide>; result: Found }> => {
      const reloadId = reloadIdFor(workspaceId, revision);
      // 'start': nothing written yet; the reload this job is about (in flight, or the one it would trigger).
      if (first) await step('start', state.inFlight ?? reloadId);
      first = false;
      if (state.inFlight) return { events: [], result: { kind: 'in_flight', reload: state.reloads.get(state.inFlight)! } };
      const now = d.now().toISOString();
      // Cheap refusals first (disabled, suspended…), before waiting on the projections.
      const early = reloadBlocker(state, -1n, now);
      if (early && early !== 'above_threshold') return { events: [], result: { kind: 'skipped', reason: early } };
      // The projected balance must include every deposit and reload just read.
      if (!(await d.progress.waitFor(head, d.projectionWaitMs ?? 10_000))) {
        throw new Error(`projections have not reached billing-${workspaceId} yet; retrying`);
      }
      const { balance } = await getBalance(d.readModels, workspaceId);
      const events = decide({ type: 'TriggerReload', data: { workspaceId, reloadId, balance, now } }, state);
      if (!events.length) return { events, result: { kind: 'skipped', reason: reloadBlocker(state, balance, now)! } };
      await step('before-trigger', reloadId);
      return { events, result: { kind: 'triggered', reloadId, amount: state.autoReload!.amount, balance } };
    },
    {
      // Ids derived from the reload id (itself from the revision decided at): a re-sent append is the same write.
      eventIds: ({ result }) => [reloadEventId(triggeredId(result), 'triggered')],
      metadata: ({ result }) => META(triggeredId(result), opts.cause),
      retries: 9,
    },
  );
  const r = found.result;
  if (r.kind === 'skipped') return { action: 'skipped', reason: r.reason };
  if (r.kind === 'in_flight') return finishReload(d, workspaceId, r.reload, step, opts.cause);
  d.log.info({ workspaceId, reloadId: r.reloadId, amount: formatUsd(r.amount), balance: formatUsd(r.balance) }, 'auto-reload triggered');
  await step('after-trigger', r.reloadId);
  // Read back rather than trust the decision: the fold is what a restarted worker will see.
  const { state: after } = await loadState(d.store, stream, billingDecider);
  const rec = after.reloads.get(r.reloadId);
  if (!rec) throw new Error(`reload ${r.reloadId} not found after it was appended`);
  if (rec.status !== 'in_flight')
    return { action: rec.status, reloadId: r.reloadId, amountNanoUsd: rec.amount.toString(), code: rec.code ?? undefined };
  return finishReload(d, workspaceId, rec, step, opts.cause);
}

/** Charges a triggered reload and records how the charge ended (settles it). */
async function finishReload(
  d: ReloadDeps,
  workspaceId: string,
  reload: ReloadRecord,
  step: (s: ReloadStep, reloadId?: string) => Promise<void>,
  cause?: string,
): Promise<ReloadResult> {
  const outcome = await chargeReload(d, workspaceId, reload);
  await step('after-charge', reload.reloadId);
  const result = await recordOutcome(d, workspaceId, reload.reloadId, outcome, cause);
  await step('after-outcome', reload.reloadId);
  return result;
}

/** A reload too old to charge again, or without a card, fails without a charge. */
async function chargeReload(d: ReloadDeps, workspaceId: string, reload: ReloadRecord): Promise<ChargeOutcome> {
  const age = d.now().getTime() - Date.parse(reload.triggeredAt);
  if (age > (d.staleAfterMs ?? 23 * 3600 * 1000)) {
    // Stripe keeps idempotency keys about 24 hours: charging again now could charge twice.
    return {
      status: 'failed',
      paymentIntentId: null,
      code: 'outcome_unknown',
      reason: 'The charge could not be confirmed within 23 hours; finance should check `tollgate ledger reconcile`',
    };
  }
  if (!reload.paymentMethodId) {
    return { status: 'failed', paymentIntentId: null, code: 'no_payment_method', reason: 'No payment method on file' };
  }
  try {
    return await chargeOnce(d, 'reload', {
      idempotencyKey: idempotencyKeys.reload(reload.reloadId),
      customerId: reload.customerId,
      paymentMethodId: reload.paymentMethodId,
      amountNanoUsd: reload.amount,
      offSession: true,
      description: `tollgate auto-reload ${formatUsd(reload.amount)} USD`,
      metadata: {
        tollgate_kind: 'reload',
        workspace_id: workspaceId,
        ledger_id: reload.reloadId,
        amount_nano_usd: reload.amount.toString(),
      },
    });
  } catch (err) {
    if (err instanceof GatewayUnavailable)
      d.log.warn(
        { workspaceId, reloadId: reload.reloadId, err: err.message },
        'auto-reload charge outcome unknown; will retry with the same key',
      );
    throw err;
  }
}

async function recordOutcome(
  d: ReloadDeps,
  workspaceId: string,
  reloadId: string,
  outcome: ChargeOutcome,
  cause?: string,
): Promise<ReloadResult> {
  const h = await handleCommand(
    d.store,
    streams.billing(workspaceId),
    billingDecider,
    (state) => {
      const events = decide({ type: 'RecordReloadOutcome', data: { workspaceId, reloadId, outcome } }, state);
      return { events, result: evolveDecided(state, events, d.now().toISOString()).reloads.get(reloadId)! };
    },
    {
      // The same ids on every attempt: a worker that died after the append finds its write already there.
      eventIds: () => [reloadEventId(reloadId, 'outcome'), reloadEventId(reloadId, 'suspended')],
      metadata: META(reloadId, cause),
      retries: 9,
    },
  );
  const result = h.result;
  if (h.appended) d.log.info({ workspaceId, reloadId, status: result.status, code: result.code }, 'auto-reload settled');
  return {
    action: result.status === 'succeeded' ? 'succeeded' : 'failed',
    reloadId,
    amountNanoUsd: result.amount.toString(),
    code: result.code ?? undefined,
  };
}
