import type { WorkspaceEvent } from '../../events';
import { assertNever } from '../../../platform/event';
import { projection } from '../../../platform/projections/projection';

export const INVITATIONS = 'invitations';

/**
 * Invitations: each one by id (kept after it is settled, so a second accept answers 409 rather than
 * 404), and the pending ones by the invitee's e-mail and by workspace.
 *
 *   rm:invitations:{gen}:inv:{invitationId}  hash: invitationId, workspaceId, email, userId, invitedBy,
 *                                             status (pending|accepted|declined|revoked), created, settled (ISO or "")
 *   rm:invitations:{gen}:email:{email}       hash: invitationId → workspaceId   (pending only)
 *   rm:invitations:{gen}:ws:{wsId}           hash: invitationId → email         (pending only)
 */
export const invitationsProjection = projection<WorkspaceEvent>()({
  name: INVITATIONS,
  handles: ['InvitationSent', 'InvitationAccepted', 'InvitationDeclined', 'InvitationRevoked'],
  apply(event, tx) {
    switch (event.type) {
      case 'InvitationSent': {
        const d = event.data;
        tx.multi
          .hset(tx.key('inv', d.invitationId), {
            invitationId: d.invitationId,
            workspaceId: d.workspaceId,
            email: d.email,
            userId: d.userId,
            invitedBy: d.invitedBy,
            status: 'pending',
            created: event.created,
            settled: '',
          })
          .hset(tx.key('email', d.email), d.invitationId, d.workspaceId)
          .hset(tx.key('ws', d.workspaceId), d.invitationId, d.email);
        break;
      }
      case 'InvitationAccepted':
      case 'InvitationDeclined': {
        const d = event.data;
        const status = event.type === 'InvitationAccepted' ? 'accepted' : 'declined';
        // The e-mail is only in the invitation's own hash: read it inside the MULTI.
        tx.multi.eval(
          `local email = redis.call('HGET', KEYS[1], 'email')
           if not email then return 0 end
           redis.call('HSET', KEYS[1], 'status', ARGV[2], 'settled', ARGV[3])
           redis.call('HDEL', ARGV[4] .. email, ARGV[1])
           redis.call('HDEL', KEYS[2], ARGV[1])
           return 1`,
          2,
          tx.key('inv', d.invitationId),
          tx.key('ws', d.workspaceId),
          d.invitationId,
          status,
          event.created,
          tx.key('email', ''),
        );
        break;
      }
      case 'InvitationRevoked': {
        const d = event.data;
        tx.multi
          .hset(tx.key('inv', d.invitationId), 'status', 'revoked', 'settled', event.created)
          .hdel(tx.key('email', d.email), d.invitationId)
          .hdel(tx.key('ws', d.workspaceId), d.invitationId);
        break;
      }
      default:
        assertNever(event);
    }
  },
});
