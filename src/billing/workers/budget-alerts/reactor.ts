import type { Redis } from 'ioredis';
import { nameUuid } from '../../ids';
import { keyBudgetAt } from '../../projections/balances/queries';
import type { KeyBudgetThresholdEvent } from '../../events';
import type { TokensDebited } from '../../../inference/events';
import { WrongExpectedVersion, type EventStore } from '../../../platform/eventstore/port';
import type { Keyspace } from '../../../platform/projections/keyspace';
import { reactor } from '../../../platform/projections/projection';
import type { ReadModels } from '../../../platform/projections/read-models';
import { streams } from '../../../platform/streams';

const THRESHOLDS = [
  { percent: 80, type: 'KeyBudget80PercentReached' },
  { percent: 100, type: 'KeyBudget100PercentReached' },
] as const;

/** Markers live past the longest period (a month) so a crossing is looked up in Redis, not the store. */
const MARKER_SECONDS = 40 * 86_400;

/**
 * Sees each debit after the balances projection applied it; when the key's spend in the budget's
 * period (the period the debit was recorded in) has reached 80% or 100% of its budget, appends
 * KeyBudget{80,100}PercentReached once per key, period and threshold: its own stream written with
 * `no_stream` and an id derived from key, period and threshold, so a retried reaction (at least
 * once) or a crash between the append and the marker writes nothing new. A rebuild or replay runs no
 * reactor, so it never writes one either. The marker in Redis only spares the store a repeated
 * append for the rest of the period.
 */
export function keyBudgetAlertReactor(deps: { readModels: ReadModels; redis: Redis; ks: Keyspace; store: Pick<EventStore, 'append'> }) {
  return reactor<TokensDebited>()({
    name: 'key-budget-alerts',
    handles: ['TokensDebited'],
    async react(event) {
      const d = event.data;
      if (BigInt(d.amountNanoUsd) <= 0n) return;
      const status = await keyBudgetAt(deps.readModels, d.workspaceId, d.keyId, new Date(event.created));
      if (!status || status.budget <= 0n) return;
      for (const t of THRESHOLDS) {
        if (status.spent * 100n < status.budget * BigInt(t.percent)) continue;
        const periodId = status.window.id;
        const marker = deps.ks.shared('key-budget-alerted', d.keyId, periodId, String(t.percent));
        if (await deps.redis.exists(marker)) continue;
        const alert: KeyBudgetThresholdEvent = {
          type: t.type,
          data: {
            workspaceId: d.workspaceId,
            keyId: d.keyId,
            thresholdPercent: t.percent,
            budgetNanoUsd: status.budget.toString(),
            spentNanoUsd: status.spent.toString(),
            period: status.period,
            periodId,
            periodStart: status.window.start.toISOString(),
            resetsAt: status.window.resetsAt.toISOString(),
            requestId: d.requestId,
          },
        };
        try {
          await deps.store.append(
            streams.keyBudgetThreshold(d.keyId, periodId, t.percent),
            [
              {
                id: nameUuid(`key-budget:${d.keyId}:${periodId}:${t.percent}`),
                ...alert,
                metadata: { actor: 'system:key-budget-alerts', causationId: event.id },
              },
            ],
            { expectedRevision: 'no_stream' },
          );
        } catch (err) {
          // Written before by another reaction with other data (a different debit saw it first): done.
          if (!(err instanceof WrongExpectedVersion)) throw err;
        }
        await deps.redis.set(marker, '1', 'EX', MARKER_SECONDS);
      }
    },
  });
}
