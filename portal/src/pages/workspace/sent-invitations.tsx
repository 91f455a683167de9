import { del, enc } from '../../api';
import type { SentInvitation } from '../../api-types';
import { ErrorMessage } from '../../components/ui';
import { dateTime } from '../../format';
import { useWorkspace } from '../../state';
import { useAction } from '../../action';

/** The workspace's invitations still open; admins may revoke them. */
export function SentInvitations({
  invitations,
  isAdmin,
  say,
}: {
  invitations: { data: SentInvitation[] | null | undefined; reload(): Promise<unknown> };
  isAdmin: boolean;
  say: (text: string) => void;
}) {
  const ws = useWorkspace();
  const {
    run: revoke,
    running,
    error: revokeError,
  } = useAction(async (i: SentInvitation) => {
    try {
      await del(`/v1/workspaces/${enc(ws.workspaceId)}/invitations/${enc(i.invitationId)}`);
      say(`The invitation to ${i.email} was revoked: it is gone from their list.`);
    } finally {
      // Revoked, or answered meanwhile (409): either way the list has changed.
      await invitations.reload();
    }
  });
  const revoking = running?.[0].invitationId ?? null;

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
