import { policyAcceptanceProjection } from './projections/policy-acceptance/projection';
import type { Module } from '../../services';
import { policyRoutes } from './routes/policy-routes';

/**
 * The usage policy: the versioned rules (USAGE_POLICY_FILE), their acceptance (UsagePolicyAccepted
 * on the user's stream) and the read model that says who accepted which version.
 */
export const policyModule: Module = {
  name: 'policy',
  projections: () => [policyAcceptanceProjection],
  router: (s) => policyRoutes(s),
};
