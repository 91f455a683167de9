import { ApiError, enc, post } from '../api';
import type { Invitation } from '../model';
import { useSession } from '../state';
import { ErrorMessage } from './ui';
import { useAction } from '../action';

/** Pending invitations, at the top of the playground page (the spec's place for them). */
export function Invitations({ invitations, onAnswered }: { invitations: Invitation[]; onAnswered: (message: string) => void }) {
  const { refresh, selectWorkspace } = useSession();
  const {
    run: act,
    busy,
    error,
  } = useAction(async (inv: Invitation, action: 'accept' | 'decline') => {
    const workspaceName = inv.workspaceName ?? 'a workspace';
    try {
      await post(`/v1/invitations/${enc(inv.invitationId)}/${action}`);
      onAnswered(
        action === 'accept'
          ? `You joined ${workspaceName}: its keys and billing are now shared with you.`
          : `You declined the invitation to ${workspaceName}.`,
      );
      await refresh();
      if (action === 'accept') selectWorkspace(inv.workspaceId);
    } catch (err) {
      // Revoked or answered elsewhere (409): say so above the page, and re-read the list.
      if (!(err instanceof ApiError && err.status === 409)) throw err;
      onAnswered(`The invitation to ${workspaceName} is no longer open: ${err.message}.`);
      await refresh();
    }
  });
  return (
    <section class="card invitations" aria-labelledby="inv-title">
      <h2 id="inv-title">Pending invitations</h2>
      <ul class="plain-list">
        {invitations.map((inv) => {
          const workspaceName = inv.workspaceName ?? 'a workspace';
          return (
            <li key={inv.invitationId} class="invitation" data-testid="invitation">
              <p>
                <strong>{inv.invitedBy.name || inv.invitedBy.email || 'An admin'}</strong> invited you to the workspace{' '}
                <strong>{workspaceName}</strong>.
              </p>
              <div class="actions">
                <button type="button" class="button button-primary" disabled={busy} onClick={() => act(inv, 'accept')}>
                  Accept<span class="visually-hidden"> the invitation to {workspaceName}</span>
                </button>
                <button type="button" class="button" disabled={busy} onClick={() => act(inv, 'decline')}>
                  Decline<span class="visually-hidden"> the invitation to {workspaceName}</span>
                </button>
              </div>
            </li>
          );
        })}
      </ul>
      <ErrorMessage error={error} />
    </section>
  );
}
