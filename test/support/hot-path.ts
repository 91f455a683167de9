import { accountsModule } from '../../src/accounts/module';
import { billingModule } from '../../src/billing/module';
import type { Module } from '../../src/services';

/**
 * A module of the hot path's read models alone (the key index, balances), as accounts' and
 * billing's modules name them: what the inference tests and benches run without the areas' routes.
 */
export const hotPathReadModels: Module = {
  name: 'hot-path-read-models',
  hotPathProjections: [accountsModule, billingModule].flatMap((m) => m.hotPathProjections ?? []),
};
