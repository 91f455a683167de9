import type { WorkspaceEvent } from '../../events';
import { assertNever } from '../../../platform/event';
import { projection } from '../../../platform/projections/projection';
import { luaScript } from '../../../platform/redis-scripts';

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
export const SETTLE = luaScript('accounts/projections/invitations/settle.lua', {
  keys: ['invitation', 'pendingInWorkspace'],
  args: ['invitationId', 'status', 'settled', 'emailPrefix'],
});

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
        void SETTLE.eval(
          tx.multi,
          { invitation: tx.key('inv', d.invitationId), pendingInWorkspace: tx.key('ws', d.workspaceId) },
          { invitationId: d.invitationId, status, settled: event.created, emailPrefix: tx.key('email', '') },
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
