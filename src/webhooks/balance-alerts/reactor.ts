import { nameUuid } from '../../billing';
import type { TokensDebited } from '../../inference/events';
import { handleCommand, type Decider } from '../../platform/eventstore/command-handler';
import { reactor } from '../../platform/projections/projection';
import { streams } from '../../platform/streams';
import type { Services } from '../../services';
import type { BalanceThresholdCrossed } from '../events';
import { BALANCE_ALERTS } from './projection';

/** The stored alert's id, from the debit that crossed: seen twice, it is stored once. */
export const crossingEventId = (debitEventId: string) => nameUuid(`balance-below-threshold:${debitEventId}`);

const seen: Decider<Set<string>, BalanceThresholdCrossed> = {
  initial: () => new Set(),
  evolve: (s, e) => new Set(s).add(e.data.causedBy),
};

type Deps = Pick<Services, 'store' | 'readModels'>;

/**
 * Stores a BalanceThresholdCrossed for each debit the balance-alerts projection marked as a
 * crossing. The webhooks reactor then delivers it like any stored event, and a replay finds it in
 * the log. Reactors run after their runner's projections committed, and with partitioned projectors
 * a debit's reactions run in its workspace's partition (platform/projections/partitions.ts), whose
 * runner has just applied it: the crossing is there to read, with no wait on other partitions.
 */
export function balanceAlertReactor(deps: Deps) {
  return reactor<TokensDebited>()({
    name: 'balance-alerts',
    handles: ['TokensDebited'],
    async react(event) {
      const ws = event.data.workspaceId;
      const [crossing] = (await deps.readModels.read(BALANCE_ALERTS, (k) => [['hget', k('crossings', ws), event.id]])) as [string | null];
      if (!crossing) return;
      const [thresholdNanoUsd, balanceNanoUsd] = crossing.split(':');
      await handleCommand<Set<string>, void, BalanceThresholdCrossed>(
        deps.store,
        streams.balanceAlerts(ws),
        seen,
        (s) => ({
          events: s.has(event.id)
            ? []
            : [
                {
                  type: 'BalanceThresholdCrossed',
                  data: { workspaceId: ws, thresholdNanoUsd, balanceNanoUsd, causedBy: event.id, causedAt: event.created },
                },
              ],
          result: undefined,
        }),
        { metadata: { actor: 'balance-alerts', causationId: event.id }, eventIds: () => [crossingEventId(event.id)] },
      );
    },
  });
}
