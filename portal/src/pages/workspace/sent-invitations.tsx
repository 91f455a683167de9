import { useState } from 'preact/hooks';
import { del, enc } from '../../api';
import type { SentInvitation } from '../../api-types';
import { ErrorMessage } from '../../components/ui';
import { dateTime } from '../../format';
import { useWorkspace } from '../../state';

/** The workspace's invitations still open; admins may revoke them. */
export function SentInvitations({ invitations, isAdmin, say }: { invitations: { data: SentInvitation[] | null | undefined; reload(): Promise<unknown> }; isAdmin: boolean; say: (text: string) => void }) {
  const ws = useWorkspace();
  const [revokeError, setRevokeError] = useState<unknown>(null);
  const [revoking, setRevoking] = useState<string | null>(null);

  const revoke = async (i: SentInvitation) => {
    setRevoking(i.invitationId);
    setRevokeError(null);
    try {
      await del(`/v1/workspaces/${enc(ws.workspaceId)}/invitations/${enc(i.invitationId)}`);
      say(`The invitation to ${i.email} was revoked: it is gone from their list.`);
      await invitations.reload();
    } catch (err) {
      setRevokeError(err);
      await invitations.reload();
    } finally {
      setRevoking(null);
    }
  };

  const list = invitations.data;
  if (!list || list.length === 0) return null;
  return (
    <div class="card">
      <h2>Pending invitations</h2>
      <ErrorMessage error={revokeError} />
      <ul class="plain-list sent-invitations">
        {list.map((i) => (
          <li key={i.invitationId} class="sent-invitation" data-testid="sent-invitation">
            <p>
              <strong class="break">{i.email}</strong>{' '}
              <span class="muted">
                — invited {dateTime(i.created)}
                {i.invitedBy?.name ? ` by ${i.invitedBy.name}` : ''}; they see it at their next login.
              </span>
            </p>
            {isAdmin && (
              <button type="button" class="button button-danger-quiet" disabled={revoking !== null} onClick={() => void revoke(i)}>
                {revoking === i.invitationId ? 'Revoking…' : 'Revoke'}
                <span class="visually-hidden"> the invitation to {i.email}</span>
              </button>
            )}
          </li>
        ))}
      </ul>
    </div>
  );
}
