import type { Module } from './services';
import { balancesProjection } from './billing';
import { keyIndexProjection } from './accounts';

/** The read models the hot path depends on: the key index and balances. */
export const coreReadModels: Module = {
  name: 'core-read-models',
  projections: () => [keyIndexProjection, balancesProjection],
};

/** The read models the inference hot path answers from (readModelsGate holds its routes back until they are ready). */
export const HOT_PATH_READ_MODELS: readonly string[] = [keyIndexProjection.name, balancesProjection.name];
