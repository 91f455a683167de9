import { createHash } from 'node:crypto';

/**
 * The name each kind of stream starts with, before its id: what a reader of `$all` checks to pick a
 * kind of stream out (the ledger's verify and reconcile, the audit log).
 */
export const streamPrefix = {
  user: 'user-',
  email: 'email-',
  workspace: 'workspace-',
  billing: 'billing-',
  webhooks: 'webhooks-',
  balanceAlerts: 'balance-alerts-',
  inference: 'inference-',
  keyBudget: 'key-budget-',
} as const;

/** Stream names. Every event of tollgate lives in one of these (docs/ARCHITECTURE.md, "Streams and events"). */
export const streams = {
  user: (userId: string) => `${streamPrefix.user}${userId}`,
  /** An e-mail claim, named by the keyed hash of the normalized address (Services.lookupHash): not reversible without the server's secret. */
  emailClaim: (lookupHash: string) => `${streamPrefix.email}${lookupHash}`,
  /** The claim streams before encryption (sha256 of the address, reversible with a list of addresses): still read until migrated. */
  legacyEmail: (email: string) => `${streamPrefix.email}${createHash('sha256').update(email.trim().toLowerCase()).digest('hex')}`,
  workspace: (workspaceId: string) => `${streamPrefix.workspace}${workspaceId}`,
  billing: (workspaceId: string) => `${streamPrefix.billing}${workspaceId}`,
  /** A workspace's webhook endpoints and its balance-alert threshold. */
  webhooks: (workspaceId: string) => `${streamPrefix.webhooks}${workspaceId}`,
  /** The balance crossings the balance-alert reactor stores, one event per debit that crossed. */
  balanceAlerts: (workspaceId: string) => `${streamPrefix.balanceAlerts}${workspaceId}`,
  inference: (requestId: string) => `${streamPrefix.inference}${requestId}`,
  /** One KeyBudget{80,100}PercentReached per key, budget period and threshold (written with no_stream). */
  keyBudgetThreshold: (keyId: string, periodId: string, percent: number) => `${streamPrefix.keyBudget}${keyId}-${periodId}-${percent}`,
};
