import { createHash } from 'node:crypto';

/**
 * Name-based ids (RFC 4122 version 5 layout over SHA-1): the same name always gives the same uuid.
 * They make retries safe: a retried deposit request, two workers racing for one reload, or a worker
 * restarted after a crash all arrive at the same id, hence the same Stripe idempotency key.
 */
const NAMESPACE = Buffer.from('6f1c5a0e3b2d4c8e9a7f1b3c5d7e9f01', 'hex'); // tollgate billing

export function nameUuid(name: string): string {
  const h = createHash('sha1').update(NAMESPACE).update(name, 'utf8').digest();
  h[6] = (h[6] & 0x0f) | 0x50;
  h[8] = (h[8] & 0x3f) | 0x80;
  const x = h.subarray(0, 16).toString('hex');
  return `${x.slice(0, 8)}-${x.slice(8, 12)}-${x.slice(12, 16)}-${x.slice(16, 20)}-${x.slice(20, 32)}`;
}

/** The deposit a client's Idempotency-Key stands for, within one workspace. */
export const depositIdFor = (workspaceId: string, idempotencyKey: string) => nameUuid(`deposit:${workspaceId}:${idempotencyKey}`);

/** The reload decided at a given revision of billing-{workspaceId}: one per revision, whoever decides it. */
export const reloadIdFor = (workspaceId: string, billingRevision: bigint | null) =>
  nameUuid(`reload:${workspaceId}:${billingRevision === null ? 'none' : billingRevision.toString()}`);

/** Event ids derived from the reload id, so a re-sent append is recognised as the same write. */
export const reloadEventId = (reloadId: string, step: 'triggered' | 'outcome' | 'suspended') => nameUuid(`${reloadId}:${step}`);

/** Stripe idempotency keys, derived from the ledger (never the SDK's own per-call key). */
export const idempotencyKeys = {
  deposit: (depositId: string) => `deposit-${depositId}`,
  reload: (reloadId: string) => `reload-${reloadId}`,
  customer: (workspaceId: string) => `customer-${workspaceId}`,
  attach: (workspaceId: string, paymentMethodId: string) => `attach-${workspaceId}-${paymentMethodId}`,
};
