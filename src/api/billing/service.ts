import type { Queue } from 'bullmq';
import type { Config } from '../../config';
import {
  billingDecider,
  BillingRules,
  BillingState,
  ChargeOutcome,
  decideAttachPaymentMethod,
  decideDepositOutcome,
  decideReloadOutcome,
  decideRequestDeposit,
  DepositRecord,
  MAX_CHARGE,
  MIN_RELOAD,
} from '../../domain/billing/billing';
import { depositIdFor, idempotencyKeys } from '../../domain/billing/ids';
import { parseUsd } from '../../domain/money';
import { streams } from '../../domain/streams';
import { handleCommand } from '../../eventstore/command-handler';
import type { AppendResult, EventMetadata } from '../../eventstore/port';
import { createPaymentGateway, GatewayRejected, GatewayUnavailable, PaymentGateway, PaymentRecord } from '../../payments';
import { observeGateway } from '../../metrics/observed-gateway';
import type { Services } from '../../services';
import { bullPrefix, ReloadJobData, reloadQueue } from '../../workers/auto-reload';

export { bullPrefix };

/**
 * The billing slice's use cases that talk to the payment gateway: attach a card, make a deposit,
 * settle a charge from a webhook. Each writes to billing-{wsId} through the decider with an exact
 * expected revision; the charge itself carries an idempotency key derived from the ledger.
 */

export function billingRules(config: Pick<Config, 'INITIAL_DEPOSIT_USD' | 'MIN_DEPOSIT_USD'>): BillingRules {
  return {
    initialDeposit: parseUsd(config.INITIAL_DEPOSIT_USD),
    minDeposit: parseUsd(config.MIN_DEPOSIT_USD),
    minReload: MIN_RELOAD,
    maxCharge: MAX_CHARGE,
  };
}

const gateways = new WeakMap<Services, PaymentGateway>();
/** One gateway per running service (Stripe when STRIPE_SECRET_KEY is set, else the sandbox). */
export function gatewayOf(s: Services): PaymentGateway {
  let g = gateways.get(s);
  if (!g) gateways.set(s, (g = createPaymentGateway(s.config, s.redis, s.ks, (g) => observeGateway(g, s.metrics))));
  return g;
}

/** For tests: run a service against a given gateway. */
export function useGateway(s: Services, g: PaymentGateway): void {
  gateways.set(s, g);
}

const queues = new WeakMap<Services, Promise<Queue<ReloadJobData>>>();
/** The auto-reload queue, on a connection of its own (BullMQ wants maxRetriesPerRequest: null). */
export function reloadQueueOf(s: Services): Promise<Queue<ReloadJobData>> {
  let q = queues.get(s);
  if (!q) {
    q = s
      .connectRedis('bullmq-queue', { maxRetriesPerRequest: null })
      .then((redis) => reloadQueue({ redis, prefix: bullPrefix(s.config) }));
    queues.set(s, q);
  }
  return q;
}


async function readYourWrite(s: Services, appended?: AppendResult): Promise<void> {
  if (!appended) return;
  const ok = await s.progress.waitFor(appended.position, s.config.READ_YOUR_WRITES_TIMEOUT_MS);
  if (!ok) s.log.warn({ position: appended.position.toString() }, 'projections did not reach a billing write in time; answering anyway');
}

export async function attachPaymentMethod(
  s: Services,
  cmd: { workspaceId: string; paymentMethodId: string; metadata: EventMetadata },
) {
  const gw = gatewayOf(s);
  const stream = streams.billing(cmd.workspaceId);
  const events = await s.store.readStream(stream);
  let customerId: string | null = null;
  for (const e of events) {
    const d = e.data as { customerId?: string | null };
    if (e.type === 'PaymentMethodAttached' && d.customerId) customerId = d.customerId;
  }
  const pm = await gw.attachPaymentMethod({ workspaceId: cmd.workspaceId, customerId, paymentMethodId: cmd.paymentMethodId });
  const h = await handleCommand(
    s.store,
    stream,
    billingDecider,
    (st) =>
      decideAttachPaymentMethod(st, {
        workspaceId: cmd.workspaceId,
        paymentMethodId: pm.paymentMethodId,
        brand: pm.brand,
        last4: pm.last4,
        customerId: pm.customerId,
        gateway: gw.kind,
      }),
    { metadata: cmd.metadata, newId: s.newId },
  );
  await readYourWrite(s, h.appended);
  return h.result;
}

export type DepositView = Omit<DepositRecord, 'status'> & { status: DepositRecord['status'] | 'pending'; replayed: boolean };

/**
 * A deposit for a client's Idempotency-Key. The deposit id is derived from the workspace and the
 * key, so a retried POST finds its deposit: settled → the same answer; still requested (the
 * gateway's answer was lost) → charged again with the same Stripe idempotency key, which returns
 * the first charge rather than making a second.
 */
export async function makeDeposit(
  s: Services,
  cmd: { workspaceId: string; idempotencyKey: string; amount: bigint; by: string; metadata: EventMetadata },
): Promise<DepositView> {
  const gw = gatewayOf(s);
  const stream = streams.billing(cmd.workspaceId);
  const depositId = depositIdFor(cmd.workspaceId, cmd.idempotencyKey);
  const rules = billingRules(s.config);
  const requested = await handleCommand(
    s.store,
    stream,
    billingDecider,
    (st) =>
      decideRequestDeposit(st, { workspaceId: cmd.workspaceId, depositId, amount: cmd.amount, by: cmd.by, now: s.now().toISOString() }, rules),
    { metadata: cmd.metadata, newId: s.newId },
  );
  const decided = requested.result;
  const replayed = decided.kind === 'existing';
  if (decided.deposit.status !== 'requested') return { ...decided.deposit, replayed };

  const rec = decided.deposit;
  let outcome: ChargeOutcome;
  try {
    const res = await gw.charge({
      idempotencyKey: idempotencyKeys.deposit(depositId),
      customerId: rec.customerId,
      paymentMethodId: rec.paymentMethodId,
      amountNanoUsd: rec.amount,
      offSession: false,
      description: `tollgate deposit`,
      metadata: { tollgate_kind: 'deposit', workspace_id: cmd.workspaceId, ledger_id: depositId, amount_nano_usd: rec.amount.toString() },
    });
    if (res.status === 'succeeded') outcome = { status: 'succeeded', paymentIntentId: res.paymentIntentId };
    else if (res.status === 'requires_action') {
      // Nobody can complete 3-D Secure here: cancel, so the PaymentIntent can never succeed later.
      await gw.cancel(res.paymentIntentId).catch((err) => s.log.warn({ err, pi: res.paymentIntentId }, 'could not cancel a PaymentIntent'));
      outcome = {
        status: 'failed',
        paymentIntentId: res.paymentIntentId,
        code: 'authentication_required',
        reason: 'The card requires authentication (3-D Secure), which tollgate cannot complete; use another card',
      };
    } else outcome = { status: 'failed', paymentIntentId: res.paymentIntentId, code: res.declineCode ?? res.code, reason: res.reason };
  } catch (err) {
    if (err instanceof GatewayUnavailable) {
      await readYourWrite(s, requested.appended);
      s.log.warn({ depositId, err: err.message }, 'deposit outcome unknown; a webhook or a retry with the same Idempotency-Key settles it');
      return { ...rec, status: 'pending', replayed };
    }
    if (err instanceof GatewayRejected && err.code !== 'idempotency_error') {
      outcome = { status: 'failed', paymentIntentId: null, code: err.code, reason: err.message };
    } else throw err;
  }
  const settled = await handleCommand(
    s.store,
    stream,
    billingDecider,
    (st) => decideDepositOutcome(st, { workspaceId: cmd.workspaceId, depositId, outcome }),
    { metadata: cmd.metadata, newId: s.newId },
  );
  await readYourWrite(s, settled.appended ?? requested.appended);
  return { ...settled.result, replayed };
}

/**
 * Settles a deposit or reload from the gateway's current view of its PaymentIntent (a webhook, or
 * reconcile). Returns what was done. The PaymentIntent's own metadata says which ledger entry it is.
 */
export async function settleFromPayment(
  s: Services,
  pi: PaymentRecord,
  metadata: EventMetadata,
): Promise<'settled' | 'already_settled' | 'not_final' | 'unknown_entry' | 'ignored' | 'mismatch'> {
  const kind = pi.metadata.tollgate_kind;
  const workspaceId = pi.metadata.workspace_id;
  const ledgerId = pi.metadata.ledger_id;
  if ((kind !== 'deposit' && kind !== 'reload') || !workspaceId || !ledgerId) return 'ignored';
  if (pi.status === 'pending') return 'not_final';
  const outcome: ChargeOutcome =
    pi.status === 'succeeded'
      ? { status: 'succeeded', paymentIntentId: pi.paymentIntentId }
      : {
          status: 'failed',
          paymentIntentId: pi.paymentIntentId,
          code: pi.status === 'canceled' ? 'canceled' : (pi.failureCode ?? 'card_declined'),
          reason: pi.failureMessage ?? `The payment ${pi.status === 'canceled' ? 'was canceled' : 'failed'}`,
        };
  const stream = streams.billing(workspaceId);
  let verdict = 'already_settled' as 'settled' | 'already_settled' | 'unknown_entry' | 'mismatch';
  const h = await handleCommand<BillingState, unknown>(
    s.store,
    stream,
    billingDecider,
    (st) => {
      const rec = kind === 'deposit' ? st.deposits.get(ledgerId) : st.reloads.get(ledgerId);
      if (!rec) {
        verdict = 'unknown_entry';
        return { events: [], result: null };
      }
      if (pi.status === 'succeeded' && rec.amount !== pi.amountNanoUsd) {
        verdict = 'mismatch';
        return { events: [], result: null };
      }
      const d =
        kind === 'deposit'
          ? decideDepositOutcome(st, { workspaceId, depositId: ledgerId, outcome })
          : decideReloadOutcome(st, { workspaceId, reloadId: ledgerId, outcome });
      verdict = d.events.length ? 'settled' : 'already_settled';
      return d;
    },
    { metadata, newId: s.newId },
  );
  if (verdict === 'mismatch') s.log.error({ pi: pi.paymentIntentId, ledgerId }, 'a payment does not match the amount of its ledger entry');
  await readYourWrite(s, h.appended);
  return verdict;
}
