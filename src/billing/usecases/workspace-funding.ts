import { billingDecider } from '../decide';
import { funding, type Funding } from '../funding-rule';
import { parseUsd, type NanoUsd } from '../../platform/money';
import { streams } from '../../platform/streams';
import { loadState } from '../../platform/eventstore/command-handler';
import type { Services } from '../../services';

/**
 * Whether a workspace may create API keys: a card on file and the initial deposit
 * (INITIAL_DEPOSIT_USD), read from the ledger (billing-{wsId}) rather than the read models, so a
 * deposit that just succeeded counts at once. Billing's answer for other areas: they never fold
 * the billing stream themselves.
 */
export async function workspaceFunding(
  s: Pick<Services, 'store' | 'config'>,
  workspaceId: string,
): Promise<{ funding: Funding; requiredDepositNanoUsd: NanoUsd }> {
  const { state } = await loadState(s.store, streams.billing(workspaceId), billingDecider);
  const required = parseUsd(s.config.INITIAL_DEPOSIT_USD);
  return { funding: funding(state, required), requiredDepositNanoUsd: required };
}
