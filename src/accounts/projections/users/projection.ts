import type { UserErased, UserRegistered } from '../../events';
import { ERASED } from '../../../platform/crypto/protected-store';
import { projection } from '../../../platform/projections/projection';

export const USERS = 'users';

/**
 * Public profile of each user (never the password hash).
 *
 *   rm:users:{gen}:user:{userId}  hash: userId, email, name, registered (ISO)
 */
export const usersProjection = projection<UserRegistered | UserErased>()({
  name: USERS,
  handles: ['UserRegistered', 'UserErased'],
  // Per user, not per workspace: partition 0 applies all of it (PROJECTION_PARTITIONS).
  partitioned: false,
  apply(event, tx) {
    if (event.type === 'UserErased') return void tx.multi.hset(tx.key('user', event.data.userId), { email: ERASED, name: ERASED });
    const d = event.data;
    tx.multi.hset(tx.key('user', d.userId), { userId: d.userId, email: d.email, name: d.name, registered: event.created });
  },
});
