import type { ChargeOutcome } from '../commands';
import { billingDecider } from '../decide';
import { depositIdFor, idempotencyKeys } from '../ids';
import { minimumDeposit } from '../rules';
import type { DepositRecord } from '../state';
import type { NanoUsd } from '../../platform/money';
import { streams } from '../../platform/streams';
import { loadState } from '../../platform/eventstore/command-handler';
import type { EventMetadata } from '../../platform/eventstore/port';
import { GatewayUnavailable } from '../payments/port';
import type { Services } from '../../services';
import { readYourWrites } from '../../platform/projections/read-your-writes';
import { decideBilling } from './decide-billing';
import { chargeOnce } from './charge-once';
import { gatewayError } from './gateway-errors';
import { billingRules } from './configured-rules';

type Deps = Pick<Services, 'store' | 'gateway' | 'now' | 'newId' | 'progress' | 'config' | 'log'>;

/** A deposit as the caller sees it: `pending` when the gateway's answer was lost; `replayed` when the Idempotency-Key was seen before. */
export type DepositView = Omit<DepositRecord, 'status'> & { status: DepositRecord['status'] | 'pending'; replayed: boolean };

/**
 * A deposit for a client's Idempotency-Key. The deposit id is derived from the workspace and the
 * key, so a retried POST finds its deposit: settled → the same answer; still requested (the
 * gateway's answer was lost) → charged again with the same Stripe idempotency key, which returns
 * the first charge rather than making a second.
 */
export async function makeDeposit(
  s: Deps,
  cmd: { workspaceId: string; idempotencyKey: string; amount: NanoUsd; by: string; metadata: EventMetadata },
): Promise<DepositView> {
  try {
    return await deposit(s, cmd);
  } catch (err) {
    throw gatewayError(err);
  }
}

async function deposit(s: Deps, cmd: Parameters<typeof makeDeposit>[1]): Promise<DepositView> {
  const { workspaceId } = cmd;
  const depositId = depositIdFor(workspaceId, cmd.idempotencyKey);
  const requested = await decideBilling(
    s,
    workspaceId,
    { type: 'RequestDeposit', data: { workspaceId, depositId, amount: cmd.amount, by: cmd.by, rules: billingRules(s.config) } },
    cmd.metadata,
  );
  const replayed = requested.before.deposits.has(depositId);
  const rec = requested.after.deposits.get(depositId)!;
  if (rec.status !== 'requested') return { ...rec, replayed };

  let outcome: ChargeOutcome;
  try {
    outcome = await charge(s, workspaceId, rec);
  } catch (err) {
    if (!(err instanceof GatewayUnavailable)) throw err;
    await readYourWrites(s, requested.appended);
    s.log.warn({ depositId, err: err.message }, 'deposit outcome unknown; a webhook or a retry with the same Idempotency-Key settles it');
    return { ...rec, status: 'pending', replayed };
  }
  const settled = await decideBilling(
    s,
    workspaceId,
    { type: 'RecordDepositOutcome', data: { workspaceId, depositId, outcome } },
    cmd.metadata,
  );
  await readYourWrites(s, settled.appended ?? requested.appended);
  return { ...settled.after.deposits.get(depositId)!, replayed };
}

/** Charges a requested deposit (on-session) with the ledger's idempotency key. */
function charge(s: Deps, workspaceId: string, rec: DepositRecord): Promise<ChargeOutcome> {
  return chargeOnce(s, 'deposit', {
    idempotencyKey: idempotencyKeys.deposit(rec.depositId),
    customerId: rec.customerId,
    paymentMethodId: rec.paymentMethodId,
    amountNanoUsd: rec.amount,
    offSession: false,
    description: `tollgate deposit`,
    metadata: { tollgate_kind: 'deposit', workspace_id: workspaceId, ledger_id: rec.depositId, amount_nano_usd: rec.amount.toString() },
  });
}

/** The workspace's deposits (requested, succeeded, failed), newest first, and the smallest it may make next. */
export async function depositsOf(
  s: Pick<Services, 'store' | 'config'>,
  workspaceId: string,
): Promise<{ deposits: DepositRecord[]; minimumDeposit: NanoUsd }> {
  const { state } = await loadState(s.store, streams.billing(workspaceId), billingDecider);
  return { deposits: [...state.deposits.values()].reverse(), minimumDeposit: minimumDeposit(state, billingRules(s.config)) };
}
