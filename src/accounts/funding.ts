import type { NanoUsd } from '../platform/money';

/**
 * What accounts needs to know of a workspace's money before it creates a key. Accounts owns this
 * shape; billing answers in it (`workspaceFunding`, from billing's index.ts), and the create-key use
 * case names it where the answer comes in, so a change on billing's side fails to compile there.
 */
export interface Funding {
  hasPaymentMethod: boolean;
  depositedNanoUsd: NanoUsd;
  funded: boolean;
}

/** Billing's answer for one workspace: its funding and the deposit a key needs. */
export interface WorkspaceFunding {
  funding: Funding;
  requiredDepositNanoUsd: NanoUsd;
}
