import { defaultMonthlyCap } from '../rules';
import type { NanoUsd } from '../../platform/money';
import type { EventMetadata } from '../../platform/eventstore/port';
import type { Services } from '../../services';
import { readYourWrites } from '../../platform/projections/read-your-writes';
import { decideBilling } from './decide-billing';
import { billingRules } from './configured-rules';

/** Saves the auto-reload settings (which also lifts a suspension). A cap left unset defaults to a few reloads a month: never without a bound. */
export async function configureAutoReload(
  s: Pick<Services, 'store' | 'now' | 'newId' | 'progress' | 'config' | 'log'>,
  cmd: {
    workspaceId: string;
    enabled: boolean;
    threshold: NanoUsd;
    amount: NanoUsd;
    monthlyCap: NanoUsd | null | undefined;
    by: string;
    metadata: EventMetadata;
  },
): Promise<void> {
  const { workspaceId, enabled, threshold, amount, by } = cmd;
  const monthlyCap = cmd.monthlyCap == null ? defaultMonthlyCap(amount) : cmd.monthlyCap;
  const done = await decideBilling(
    s,
    workspaceId,
    { type: 'ConfigureAutoReload', data: { workspaceId, enabled, threshold, amount, monthlyCap, by, rules: billingRules(s.config) } },
    cmd.metadata,
  );
  await readYourWrites(s, done.appended);
}
