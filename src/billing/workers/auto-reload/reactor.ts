import type { Queue } from 'bullmq';
import { reloadBlockerOf, settingsBlockerOf } from '../../rules';
import { monthOf } from '../../state';
import { getBalance } from '../../projections/balances/queries';
import { autoReloadSettings } from '../../projections/billing-settings/queries';
import { reactor } from '../../../platform/projections/projection';
import type { BillingEvent } from '../../events';
import type { TokensDebited } from '../../../inference/events';
import type { ReadModels } from '../../../platform/projections/read-models';
import { enqueueReload, ReloadJobData } from './queue';

/**
 * Sees debits (and new settings or cards) after the projections committed them; when the projected
 * balance is below the threshold and nothing is in flight, enqueues a job with a deterministic id.
 * Never part of a rebuild or replay, and it never charges: the worker decides from the ledger.
 */
export function autoReloadReactor(deps: { readModels: ReadModels; queue: () => Promise<Queue<ReloadJobData>>; now: () => Date }) {
  return reactor<BillingEvent | TokensDebited>()({
    name: 'auto-reload',
    handles: ['TokensDebited', 'AutoReloadConfigured', 'PaymentMethodAttached'],
    async react(event) {
      const { workspaceId } = event.data;
      // A workspace that never configured auto-reload (the usual case) costs one field's read.
      const settings = await autoReloadSettings(deps.readModels, workspaceId, monthOf(deps.now().toISOString()));
      // A reload in flight is finished by its own job (retried by BullMQ, or re-enqueued by the sweep).
      // Settings that rule a reload out spare the balance read.
      if (!settings || settingsBlockerOf(settings)) return;
      const { balance, deposited } = await getBalance(deps.readModels, workspaceId);
      if (reloadBlockerOf({ ...settings, deposited }, balance)) return;
      await enqueueReload(await deps.queue(), workspaceId, settings.revision, event.id);
    },
  });
}
