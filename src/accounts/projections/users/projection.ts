import type { UserRegistered } from '../../events';
import { projection } from '../../../platform/projections/projection';

export const USERS = 'users';

/**
 * Public profile of each user (never the password hash).
 *
 *   rm:users:{gen}:user:{userId}  hash: userId, email, name, registered (ISO)
 */
export const usersProjection = projection<UserRegistered>()({
  name: USERS,
  handles: ['UserRegistered'],
  // Per user, not per workspace: partition 0 applies all of it (PROJECTION_PARTITIONS).
  partitioned: false,
  apply(event, tx) {
    const d = event.data;
    tx.multi.hset(tx.key('user', d.userId), { userId: d.userId, email: d.email, name: d.name, registered: event.created });
  },
});
