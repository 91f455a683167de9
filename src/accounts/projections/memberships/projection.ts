import type { WorkspaceEvent } from '../../events';
import { assertNever } from '../../../platform/event';
import { projection } from '../../../platform/projections/projection';

export const MEMBERSHIPS = 'memberships';

/**
 * Workspaces and who belongs to them, both ways round; what every /v1 authorization check reads.
 * A removed member's (or a leaver's) entries are gone as soon as the MemberRemoved (MemberLeft) is
 * applied; a MemberRoleChanged changes the role in both directions at once.
 *
 *   rm:memberships:{gen}:ws:{wsId}           hash: workspaceId, name, personal ("true"|"false"), createdBy, created (ISO)
 *   rm:memberships:{gen}:ws:{wsId}:members   hash: userId → role ("admin"|"member")
 *   rm:memberships:{gen}:ws:{wsId}:joined    hash: userId → ISO time the member joined
 *   rm:memberships:{gen}:user:{userId}:ws    hash: wsId → role
 */
export const membershipsProjection = projection<WorkspaceEvent>()({
  name: MEMBERSHIPS,
  handles: ['WorkspaceCreated', 'WorkspaceRenamed', 'MemberJoined', 'MemberRemoved', 'MemberLeft', 'MemberRoleChanged'],
  apply(event, tx) {
    switch (event.type) {
      case 'WorkspaceCreated': {
        const d = event.data;
        tx.multi.hset(tx.key('ws', d.workspaceId), {
          workspaceId: d.workspaceId,
          name: d.name,
          personal: d.personal ? 'true' : 'false',
          createdBy: d.createdBy,
          created: event.created,
        });
        break;
      }
      case 'WorkspaceRenamed': {
        const d = event.data;
        tx.multi.hset(tx.key('ws', d.workspaceId), 'name', d.name);
        break;
      }
      case 'MemberJoined': {
        const d = event.data;
        tx.multi
          .hset(tx.key('ws', d.workspaceId, 'members'), d.userId, d.role)
          .hset(tx.key('ws', d.workspaceId, 'joined'), d.userId, event.created)
          .hset(tx.key('user', d.userId, 'ws'), d.workspaceId, d.role);
        break;
      }
      case 'MemberRoleChanged': {
        const d = event.data;
        tx.multi.hset(tx.key('ws', d.workspaceId, 'members'), d.userId, d.role).hset(tx.key('user', d.userId, 'ws'), d.workspaceId, d.role);
        break;
      }
      case 'MemberLeft':
      case 'MemberRemoved': {
        const d = event.data;
        tx.multi
          .hdel(tx.key('ws', d.workspaceId, 'members'), d.userId)
          .hdel(tx.key('ws', d.workspaceId, 'joined'), d.userId)
          .hdel(tx.key('user', d.userId, 'ws'), d.workspaceId);
        break;
      }
      default:
        assertNever(event);
    }
  },
});
