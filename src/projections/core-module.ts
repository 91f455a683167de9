import type { Module } from '../services';
import { balancesProjection } from './balances/projection';
import { keyIndexProjection } from './key-index/projection';

/** The read models the hot path depends on: the key index and balances. */
export const coreReadModels: Module = {
  name: 'core-read-models',
  projections: () => [keyIndexProjection, balancesProjection],
};
