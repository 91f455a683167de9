import {
  ChargeOutcome,
  decideReloadOutcome,
  decideTriggerReload,
  foldBilling,
  ReloadRecord,
  reloadBlocker,
} from '../../domain/billing/billing';
import { idempotencyKeys, reloadEventId, reloadIdFor } from '../../domain/billing/ids';
import type { Event } from '../../domain/event';
import { formatUsd } from '../../domain/money';
import { streams } from '../../domain/streams';
import { EventMetadata, EventStore, RecordedEvent, WrongExpectedVersion } from '../../eventstore/port';
import type { Logger } from '../../log';
import type { PaymentGateway } from '../../payments/port';
import { GatewayRejected, GatewayUnavailable } from '../../payments/port';
import { getBalance } from '../../projections/balances/queries';
import type { ProjectionProgress } from '../../projections/progress';
import type { ReadModels } from '../../projections/read-models';

/**
 * Auto-reload, run by BullMQ. The reactor only enqueues; the processor decides from the ledger:
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

function lastRevision(events: RecordedEvent[]): bigint | null {
  return events.length ? events[events.length - 1].revision : null;
}

/** One pass of the auto-reload decision and charge for a workspace. Safe to run any number of times. */
export async function runReload(
  d: ReloadDeps,
  workspaceId: string,
  opts: { hooks?: ReloadHooks; cause?: string } = {},
): Promise<ReloadResult> {
  const step = async (s: ReloadStep, reloadId?: string) => opts.hooks?.step?.(s, { workspaceId, reloadId });
  const stream = streams.billing(workspaceId);
  for (let attempt = 0; attempt < 10; attempt++) {
    const events = await d.store.readStream(stream);
    const state = foldBilling(events);
    const revision = lastRevision(events);
    // 'start': nothing written yet; the reload this job is about (in flight, or the one it would trigger).
    if (attempt === 0) await step('start', state.inFlight ?? reloadIdFor(workspaceId, revision));
    if (state.inFlight) {
      return settle(d, workspaceId, state.reloads.get(state.inFlight)!, step, opts.cause);
    }
    const now = d.now().toISOString();
    // Cheap refusals first (disabled, suspended…), before waiting on the projections.
    const early = reloadBlocker(state, -1n, now);
    if (early && early !== 'above_threshold') return { action: 'skipped', reason: early };
    // The projected balance must include every deposit and reload just read.
    const head = events.length ? events[events.length - 1].position : 0n;
    if (!(await d.progress.waitFor(head, d.projectionWaitMs ?? 10_000))) {
      throw new Error(`projections have not reached billing-${workspaceId} yet; retrying`);
    }
    const { balance } = await getBalance(d.readModels, workspaceId);
    const reloadId = reloadIdFor(workspaceId, revision);
    const decision = decideTriggerReload(state, { workspaceId, reloadId, balance, now });
    if (!decision.result.triggered) return { action: 'skipped', reason: decision.result.skip };
    await step('before-trigger', reloadId);
    try {
      await d.store.append(stream, toNew(decision.events, [reloadEventId(reloadId, 'triggered')], META(reloadId, opts.cause)), {
        expectedRevision: revision === null ? 'no_stream' : revision,
      });
    } catch (err) {
      if (err instanceof WrongExpectedVersion) continue; // someone else wrote first: decide again
      throw err;
    }
    d.log.info({ workspaceId, reloadId, amount: formatUsd(decision.result.reload.amount), balance: formatUsd(balance) }, 'auto-reload triggered');
    await step('after-trigger', reloadId);
    // Read back rather than trust the decision: the fold is what a restarted worker will see.
    const after = foldBilling(await d.store.readStream(stream));
    const rec = after.reloads.get(reloadId);
    if (!rec) throw new Error(`reload ${reloadId} not found after it was appended`);
    if (rec.status !== 'in_flight') return { action: rec.status, reloadId, amountNanoUsd: rec.amount.toString(), code: rec.code ?? undefined };
    return settle(d, workspaceId, rec, step, opts.cause);
  }
  throw new Error(`billing-${workspaceId} kept changing; giving up this attempt`);
}

async function settle(
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
    const res = await d.gateway.charge({
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
    if (res.status === 'succeeded') return { status: 'succeeded', paymentIntentId: res.paymentIntentId };
    if (res.status === 'requires_action') {
      await d.gateway.cancel(res.paymentIntentId).catch(() => undefined);
      return {
        status: 'failed',
        paymentIntentId: res.paymentIntentId,
        code: 'authentication_required',
        reason: 'The card needs authentication, which an automatic charge cannot do',
      };
    }
    return { status: 'failed', paymentIntentId: res.paymentIntentId, code: res.declineCode ?? res.code, reason: res.reason };
  } catch (err) {
    if (err instanceof GatewayRejected && err.code !== 'idempotency_error') {
      // Refused before any money moved (the card was removed, say).
      return { status: 'failed', paymentIntentId: null, code: err.code, reason: err.message };
    }
    if (err instanceof GatewayUnavailable) d.log.warn({ workspaceId, reloadId: reload.reloadId, err: err.message }, 'auto-reload charge outcome unknown; will retry with the same key');
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
  const stream = streams.billing(workspaceId);
  for (let attempt = 0; attempt < 10; attempt++) {
    const events = await d.store.readStream(stream);
    const state = foldBilling(events);
    const { events: out, result } = decideReloadOutcome(state, { workspaceId, reloadId, outcome });
    if (out.length) {
      try {
        await d.store.append(
          stream,
          toNew(out, [reloadEventId(reloadId, 'outcome'), reloadEventId(reloadId, 'suspended')], META(reloadId, cause)),
          { expectedRevision: lastRevision(events) ?? 'no_stream' },
        );
      } catch (err) {
        if (err instanceof WrongExpectedVersion) continue;
        throw err;
      }
      d.log.info({ workspaceId, reloadId, status: result.status, code: result.code }, 'auto-reload settled');
    }
    return { action: result.status === 'succeeded' ? 'succeeded' : 'failed', reloadId, amountNanoUsd: result.amount.toString(), code: result.code ?? undefined };
  }
  throw new Error(`could not record the outcome of reload ${reloadId}`);
}

function toNew(events: Event[], ids: string[], metadata: EventMetadata) {
  return events.map((e, i) => ({ id: ids[i], type: e.type, data: e.data, metadata }));
}
