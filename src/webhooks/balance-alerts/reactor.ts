import { nameUuid } from '../../billing';
import type { TokensDebited } from '../../inference/events';
import { handleCommand, type Decider } from '../../platform/eventstore/command-handler';
import { reactor } from '../../platform/projections/projection';
import { projectionStatus } from '../../platform/projections/status';
import type { Services } from '../../services';
import type { BalanceThresholdCrossed } from '../events';
import { BALANCE_ALERTS } from './projection';

export const balanceAlertStream = (workspaceId: string) => `balance-alerts-${workspaceId}`;

/** The stored alert's id, from the debit that crossed: seen twice, it is stored once. */
export const crossingEventId = (debitEventId: string) => nameUuid(`balance-below-threshold:${debitEventId}`);

const seen: Decider<Set<string>, BalanceThresholdCrossed> = {
  initial: () => new Set(),
  evolve: (s, e) => new Set(s).add(e.data.causedBy),
};

type Deps = Pick<Services, 'store' | 'readModels' | 'config'>;

/**
 * Waits until the balance-alerts projection (every partition of it) applied `position`. Not the
 * global progress: that moves only after this runner's reactors, so waiting on it here would wait
 * on itself. Unpartitioned, the projection committed before the reactors ran: one read.
 */
async function projectionReached(deps: Deps, position: bigint): Promise<void> {
  const deadline = Date.now() + deps.config.READ_YOUR_WRITES_TIMEOUT_MS;
  for (let pause = 5; ; pause = Math.min(pause * 2, 200)) {
    const [st] = await projectionStatus(deps.store, deps.readModels.redis, deps.readModels.ks, [BALANCE_ALERTS], deps.config.PROJECTION_PARTITIONS);
    if (BigInt(st.checkpoint) >= position) return;
    if (Date.now() > deadline) throw new Error(`the ${BALANCE_ALERTS} projection has not reached position ${position} yet`);
    await new Promise((r) => setTimeout(r, pause));
  }
}

/**
 * Stores a BalanceThresholdCrossed for each debit the balance-alerts projection marked as a
 * crossing. The webhooks reactor then delivers it like any stored event, and a replay finds it in
 * the log. Reactors run after their runner's projections committed; with partitioned projectors the
 * workspace's partition may be behind, so it waits until that projection reached the debit.
 */
export function balanceAlertReactor(deps: Deps) {
  return reactor<TokensDebited>()({
    name: 'balance-alerts',
    handles: ['TokensDebited'],
    async react(event) {
      const ws = event.data.workspaceId;
      await projectionReached(deps, event.position);
      const crossing = await deps.readModels.redis.hget((await deps.readModels.keys(BALANCE_ALERTS))('crossings', ws), event.id);
      if (!crossing) return;
      const [thresholdNanoUsd, balanceNanoUsd] = crossing.split(':');
      await handleCommand<Set<string>, void, BalanceThresholdCrossed>(
        deps.store,
        balanceAlertStream(ws),
        seen,
        (s) => ({
          events: s.has(event.id)
            ? []
            : [{ type: 'BalanceThresholdCrossed', data: { workspaceId: ws, thresholdNanoUsd, balanceNanoUsd, causedBy: event.id, causedAt: event.created } }],
          result: undefined,
        }),
        { metadata: { actor: 'balance-alerts', causationId: event.id }, eventIds: () => [crossingEventId(event.id)] },
      );
    },
  });
}
