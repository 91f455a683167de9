import type { UserRegistered } from '../../events';
import type { RecordedEvent } from '../../../platform/eventstore/port';
import type { Projection, ProjectionTx } from '../../../platform/projections/projection';

export const USERS = 'users';

/**
 * Public profile of each user (never the password hash).
 *
 *   rm:users:{gen}:user:{userId}  hash: userId, email, name, registered (ISO)
 */
export const usersProjection: Projection = {
  name: USERS,
  handles: new Set(['UserRegistered']),
  // Per user, not per workspace: partition 0 applies all of it (PROJECTION_PARTITIONS).
  partitioned: false,
  apply(event: RecordedEvent, tx: ProjectionTx) {
    const d = event.data as UserRegistered['data'];
    tx.multi.hset(tx.key('user', d.userId), { userId: d.userId, email: d.email, name: d.name, registered: event.created });
  },
};
