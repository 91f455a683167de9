import type { Module } from './services';
import { balancesProjection } from './billing/projections/balances/projection';
import { keyIndexProjection } from './accounts/projections/key-index/projection';

/** The read models the hot path depends on: the key index and balances. */
export const coreReadModels: Module = {
  name: 'core-read-models',
  projections: () => [keyIndexProjection, balancesProjection],
};
