import type { UsagePolicyAccepted } from '../../events';
import type { RecordedEvent } from '../../../platform/eventstore/port';
import type { Projection, ProjectionTx } from '../../../platform/projections/projection';

export const POLICY_ACCEPTANCE = 'policy-acceptance';

/**
 * The usage-policy version each user last accepted (no record: none, as for accounts created
 * before acceptance was recorded).
 *
 *   rm:policy-acceptance:{gen}:user:{userId}  hash: version, accepted (ISO)
 */
export const policyAcceptanceProjection: Projection = {
  name: POLICY_ACCEPTANCE,
  handles: new Set(['UsagePolicyAccepted']),
  // Per user, not per workspace: partition 0 applies all of it (PROJECTION_PARTITIONS).
  partitioned: false,
  apply(event: RecordedEvent, tx: ProjectionTx) {
    const d = event.data as UsagePolicyAccepted['data'];
    tx.multi.hset(tx.key('user', d.userId), { version: d.version, accepted: event.created });
  },
};
