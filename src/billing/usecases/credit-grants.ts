import { nameUuid } from '../ids';
import type { CreditGrantRecord } from '../state';
import type { NanoUsd } from '../../platform/money';
import type { EventMetadata } from '../../platform/eventstore/port';
import { readYourWrites } from '../../platform/projections/read-your-writes';
import type { Services } from '../../services';
import { billingRules } from './configured-rules';
import { decideBilling } from './decide-billing';

type Deps = Pick<Services, 'store' | 'now' | 'newId' | 'progress' | 'config' | 'log'>;

/** The grant an operator's Idempotency-Key stands for, within one workspace. */
export const grantIdFor = (workspaceId: string, idempotencyKey: string) => nameUuid(`credit-grant:${workspaceId}:${idempotencyKey}`);

/**
 * An operator grants a workspace promotional credit. The same Idempotency-Key again returns the same
 * grant (`replayed`), with another amount, priority, expiry or note it is refused (409). Waits for the
 * projections, so the next admission and the grants list see it.
 */
export async function grantCredit(
  s: Deps,
  cmd: {
    workspaceId: string;
    idempotencyKey: string;
    amount: NanoUsd;
    priority: number;
    expiresAt: string | null;
    note: string;
    metadata: EventMetadata;
  },
): Promise<CreditGrantRecord & { replayed: boolean }> {
  const { workspaceId } = cmd;
  const grantId = grantIdFor(workspaceId, cmd.idempotencyKey);
  const decided = await decideBilling(
    s,
    workspaceId,
    {
      type: 'GrantCredit',
      data: {
        workspaceId,
        grantId,
        amount: cmd.amount,
        priority: cmd.priority,
        expiresAt: cmd.expiresAt,
        note: cmd.note,
        by: 'operator',
        now: s.now().toISOString(),
        rules: billingRules(s.config),
      },
    },
    cmd.metadata,
  );
  await readYourWrites(s, decided.appended);
  return { ...decided.after.grants.get(grantId)!, replayed: decided.before.grants.has(grantId) };
}

/**
 * Records a grant's expiry once the service clock has passed it (nothing before, nothing twice).
 * The expiry worker calls it; it is exact-revision on billing-{ws}, so two workers append one event.
 */
export async function expireCredit(s: Deps, workspaceId: string, grantId: string): Promise<boolean> {
  const decided = await decideBilling(
    s,
    workspaceId,
    { type: 'ExpireCredit', data: { workspaceId, grantId, now: s.now().toISOString() } },
    { actor: 'worker:credit-expiry' },
  );
  await readYourWrites(s, decided.appended);
  return decided.events.length > 0;
}
