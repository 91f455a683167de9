import type { UsagePolicyAccepted } from '../../events';
import { projection } from '../../../../platform/projections/projection';

export const POLICY_ACCEPTANCE = 'policy-acceptance';

/**
 * The usage-policy version each user last accepted (no record: none, as for accounts created
 * before acceptance was recorded).
 *
 *   rm:policy-acceptance:{gen}:user:{userId}  hash: version, accepted (ISO)
 */
export const policyAcceptanceProjection = projection<UsagePolicyAccepted>()({
  name: POLICY_ACCEPTANCE,
  handles: ['UsagePolicyAccepted'],
  // Per user, not per workspace: partition 0 applies all of it (PROJECTION_PARTITIONS).
  partitioned: false,
  apply(event, tx) {
    const d = event.data;
    tx.multi.hset(tx.key('user', d.userId), { version: d.version, accepted: event.created });
  },
});
