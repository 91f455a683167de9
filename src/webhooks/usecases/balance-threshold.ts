import { formatUsd, isUsd, parseUsd } from '../../platform/money';
import type { EventMetadata } from '../../platform/eventstore/port';
import { DomainError } from '../../platform/errors';
import type { Services } from '../../services';
import type { BalanceAlertThresholdSet, WebhookEvent } from '../events';
import { runWebhookCommand } from './endpoint-command';
import { streams } from '../../platform/streams';

/**
 * The workspace's low-balance alert threshold (USD decimal string on the wire, nano-USD in the
 * event), or null for none. The balance-alerts projection turns it into balance.below_threshold.
 */
export async function setBalanceThreshold(
  s: Pick<Services, 'store' | 'newId'>,
  cmd: { workspaceId: string; threshold: string | null; by: string; metadata: EventMetadata },
): Promise<{ threshold: string | null }> {
  let nanoUsd: bigint | null = null;
  if (cmd.threshold !== null) {
    if (!isUsd(cmd.threshold))
      throw new DomainError('invalid', 'threshold must be a USD amount as a decimal string, such as "25" or "12.50", or null', 'threshold');
    nanoUsd = parseUsd(cmd.threshold);
    if (nanoUsd === 0n) throw new DomainError('invalid', 'threshold must be more than 0 (null turns the alert off)', 'threshold');
  }
  const { workspaceId, by } = cmd;
  const thresholdNanoUsd = nanoUsd === null ? null : nanoUsd.toString();
  await runWebhookCommand(s, workspaceId, { type: 'SetBalanceThreshold', data: { workspaceId, thresholdNanoUsd, by } }, cmd.metadata);
  return { threshold: nanoUsd === null ? null : formatUsd(nanoUsd) };
}

export async function balanceThresholdOf(s: Pick<Services, 'store'>, workspaceId: string): Promise<string | null> {
  const events = (await s.store.readStream(streams.webhooks(workspaceId))) as unknown as WebhookEvent[];
  const last = events.filter((e): e is BalanceAlertThresholdSet => e.type === 'BalanceAlertThresholdSet').at(-1);
  return last?.data.thresholdNanoUsd ? formatUsd(BigInt(last.data.thresholdNanoUsd)) : null;
}
