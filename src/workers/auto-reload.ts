import { Job, Queue, Worker } from 'bullmq';
import type { Redis } from 'ioredis';
import {
  ChargeOutcome,
  decideReloadOutcome,
  decideTriggerReload,
  foldBilling,
  monthOf,
  ReloadRecord,
  reloadBlocker,
} from '../domain/billing/billing';
import { idempotencyKeys, reloadEventId, reloadIdFor } from '../domain/billing/ids';
import type { Event } from '../domain/event';
import { formatUsd } from '../domain/money';
import { streams } from '../domain/streams';
import { EventMetadata, EventStore, RecordedEvent, WrongExpectedVersion } from '../eventstore/port';
import type { Logger } from '../log';
import type { Config } from '../config';
import { createPaymentGateway } from '../payments';
import type { PaymentGateway } from '../payments/port';
import { GatewayRejected, GatewayUnavailable } from '../payments/port';
import { BALANCES } from '../projections/balances/projection';
import { getBalance } from '../projections/balances/queries';
import { getBillingSettings, workspacesWithReloadInFlight } from '../projections/billing-settings/queries';
import type { Reactor } from '../projections/projection';
import { ProjectionProgress, RedisProgress } from '../projections/progress';
import type { ReadModels } from '../projections/read-models';
import type { Services } from '../services';

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

export const RELOAD_QUEUE = 'auto-reload';

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

export const reloadJobId = (workspaceId: string, revision: bigint | null) =>
  `reload-${workspaceId}-${revision === null ? 'none' : revision.toString()}`;

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

// ---------------------------------------------------------------------------------------------
// Queue, reactor, worker

export interface QueueOptions {
  redis: Redis;
  /** `${REDIS_PREFIX}bull`, so tests and services sharing a Redis stay apart. */
  prefix: string;
}

export interface ReloadJobData {
  workspaceId: string;
  cause?: string;
}

export function reloadQueue(o: QueueOptions): Queue<ReloadJobData> {
  return new Queue<ReloadJobData>(RELOAD_QUEUE, {
    connection: o.redis,
    prefix: o.prefix,
    defaultJobOptions: {
      attempts: 8,
      backoff: { type: 'exponential', delay: 1000 },
      // Removed when done: the same job id can be added again later (the ledger, not the job id,
      // is what keeps a reload from being charged twice).
      removeOnComplete: true,
      removeOnFail: true,
    },
  });
}

export async function enqueueReload(queue: Queue<ReloadJobData>, workspaceId: string, revision: bigint | null, cause?: string): Promise<void> {
  await queue.add('reload', { workspaceId, cause }, { jobId: reloadJobId(workspaceId, revision) });
}

/**
 * Sees debits (and new settings or cards) after the projections committed them; when the projected
 * balance is below the threshold and nothing is in flight, enqueues a job with a deterministic id.
 * Never part of a rebuild or replay, and it never charges: the worker decides from the ledger.
 */
export function autoReloadReactor(deps: {
  readModels: ReadModels;
  queue: () => Promise<Queue<ReloadJobData>>;
  now: () => Date;
}): Reactor {
  return {
    name: 'auto-reload',
    handles: new Set(['TokensDebited', 'AutoReloadConfigured', 'PaymentMethodAttached']),
    async react(event: RecordedEvent) {
      const workspaceId = (event.data as { workspaceId?: string }).workspaceId;
      if (!workspaceId) return;
      const settings = await getBillingSettings(deps.readModels, workspaceId, monthOf(deps.now().toISOString()));
      const ar = settings.autoReload;
      // A reload in flight is finished by its own job (retried by BullMQ, or re-enqueued by the sweep).
      if (!ar?.enabled || settings.suspended || !settings.paymentMethod || settings.inFlight) return;
      const { balance, deposited } = await getBalance(deps.readModels, workspaceId);
      if (deposited === 0n || balance >= ar.threshold) return;
      if (ar.monthlyCap !== null && settings.reloadedThisMonth + ar.amount > ar.monthlyCap) return;
      await enqueueReload(await deps.queue(), workspaceId, settings.revision, event.id);
    },
  };
}

export interface ReloadWorkerOptions {
  concurrency?: number;
  lockDurationMs?: number;
  stalledIntervalMs?: number;
  maxStalledCount?: number;
  /** How often workspaces with a reload in flight are re-enqueued (a job lost with its worker). 0 = never. */
  sweepIntervalMs?: number;
  hooks?: ReloadHooks;
}

export interface RunningReloadWorker {
  worker: Worker<ReloadJobData, ReloadResult>;
  queue: Queue<ReloadJobData>;
  /** Re-enqueues every workspace with a reload in flight. */
  sweep(): Promise<number>;
  close(timeoutMs?: number): Promise<void>;
}

export async function startReloadWorker(
  deps: ReloadDeps & { workerRedis: Redis; queueRedis: Redis; prefix: string },
  opts: ReloadWorkerOptions = {},
): Promise<RunningReloadWorker> {
  const queue = reloadQueue({ redis: deps.queueRedis, prefix: deps.prefix });
  const worker = new Worker<ReloadJobData, ReloadResult>(
    RELOAD_QUEUE,
    async (job: Job<ReloadJobData>) => runReload(deps, job.data.workspaceId, { hooks: opts.hooks, cause: job.data.cause }),
    {
      connection: deps.workerRedis,
      prefix: deps.prefix,
      concurrency: opts.concurrency ?? 4,
      lockDuration: opts.lockDurationMs ?? 30_000,
      stalledInterval: opts.stalledIntervalMs ?? 30_000,
      maxStalledCount: opts.maxStalledCount ?? 5,
    },
  );
  worker.on('failed', (job, err) =>
    deps.log.warn({ jobId: job?.id, attemptsMade: job?.attemptsMade, err: err.message }, 'auto-reload job failed'),
  );
  worker.on('error', (err) => deps.log.error({ err }, 'auto-reload worker error'));
  const sweep = async () => {
    const ids = await workspacesWithReloadInFlight(deps.readModels);
    for (const ws of ids) {
      const s = await getBillingSettings(deps.readModels, ws, monthOf(deps.now().toISOString()));
      await enqueueReload(queue, ws, s.revision, 'sweep');
    }
    return ids.length;
  };
  await sweep().catch((err) => deps.log.error({ err }, 'auto-reload sweep failed'));
  const timer = opts.sweepIntervalMs === 0 ? null : setInterval(() => void sweep().catch(() => undefined), opts.sweepIntervalMs ?? 60_000);
  timer?.unref();
  return {
    worker,
    queue,
    sweep,
    async close(timeoutMs = 5000) {
      if (timer) clearInterval(timer);
      // worker.close() waits for running jobs and has no timeout of its own.
      const graceful = worker.close();
      const timedOut = await Promise.race([graceful.then(() => false), sleep(timeoutMs).then(() => true)]);
      if (timedOut) await worker.close(true).catch(() => undefined);
      await queue.close().catch(() => undefined);
    },
  };
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms).unref());

export const bullPrefix = (config: Pick<Config, 'REDIS_PREFIX'>) => `${config.REDIS_PREFIX}bull`;

/**
 * The worker role's auto-reload worker over a service's parts. Outside the `all` role it waits only
 * for the balances projection (all it reads) rather than for every projection.
 */
export async function startReloadWorkerFor(
  s: Services,
  opts: ReloadWorkerOptions & { gateway?: PaymentGateway } = {},
): Promise<RunningReloadWorker> {
  const progress =
    s.config.ROLE === 'all' ? s.progress : new RedisProgress(await s.connectRedis('reload-progress'), s.redis, s.ks, [BALANCES]);
  return startReloadWorker(
    {
      store: s.store,
      readModels: s.readModels,
      progress,
      gateway: opts.gateway ?? createPaymentGateway(s.config, s.redis, s.ks),
      now: s.now,
      log: s.log.child({ part: 'auto-reload' }),
      workerRedis: await s.connectRedis('bullmq-worker', { maxRetriesPerRequest: null }),
      queueRedis: await s.connectRedis('bullmq-worker-queue', { maxRetriesPerRequest: null }),
      prefix: bullPrefix(s.config),
    },
    opts,
  );
}
