import { useState } from 'preact/hooks';
import { enc, patch, post } from '../../api';
import type { Workspace } from '../../api-types';
import { ConfirmDialog, ErrorMessage, Field, Message } from '../../components/ui';
import { useSession, useWorkspace } from '../../state';
import { useAction } from '../../action';

const val = (e: Event) => (e.target as HTMLInputElement).value;

/** Leaving a team workspace: the leaver's keys stay with it; the last admin is refused (409). */
export function LeaveCard() {
  const ws = useWorkspace();
  const { refresh, setFlash } = useSession();
  const [open, setOpen] = useState(false);
  const {
    run: leave,
    busy,
    error,
    setError,
  } = useAction(async () => {
    await post(`/v1/workspaces/${enc(ws.workspaceId)}/leave`);
    setOpen(false);
    // The message comes once the workspace list no longer holds the workspace left, so what it says
    // and what the switcher shows agree (the other way round, the old list showed beside it).
    try {
      await refresh();
    } finally {
      setFlash(`You left ${ws.name}. The keys you created there stay with it.`);
    }
  });
  return (
    <div class="card">
      <h2>Leave this workspace</h2>
      <p class="muted">
        You lose access to its keys, usage and billing at once. Keys you created stay with the workspace and keep working.
      </p>
      <button type="button" class="button button-danger-quiet" onClick={() => (setError(null), setOpen(true))}>
        Leave {ws.name}
      </button>
      <ConfirmDialog
        open={open}
        title="Leave this workspace?"
        confirmLabel="Leave workspace"
        onCancel={() => setOpen(false)}
        onConfirm={leave}
        busy={busy}
        error={error}
      >
        <p>
          You will no longer see <strong>{ws.name}</strong>. To come back, an admin must invite you again.
        </p>
      </ConfirmDialog>
    </div>
  );
}

export function RenameForm() {
  const ws = useWorkspace();
  const { refresh } = useSession();
  const [name, setName] = useState(ws.name);
  const [done, setDone] = useState(false);
  const {
    run: submit,
    busy,
    error,
  } = useAction(async (e: Event) => {
    e.preventDefault();
    setDone(false);
    await patch(`/v1/workspaces/${enc(ws.workspaceId)}`, { name: name.trim() });
    await refresh();
    setDone(true);
  });
  return (
    <form class="card" onSubmit={submit} aria-labelledby="rename-title">
      <h2 id="rename-title">Rename</h2>
      <Field label="Workspace name">
        {(p) => <input {...p} name="workspaceName" required maxLength={100} value={name} onInput={(e) => setName(val(e))} />}
      </Field>
      <ErrorMessage error={error} />
      {done && <Message kind="success">Renamed.</Message>}
      <button type="submit" class="button" disabled={busy || !name.trim() || name.trim() === ws.name}>
        Rename workspace
      </button>
    </form>
  );
}

export function CreateForm() {
  const { refresh, selectWorkspace } = useSession();
  const [name, setName] = useState('');
  const {
    run: submit,
    busy,
    error,
  } = useAction(async (e: Event) => {
    e.preventDefault();
    const w = await post<Workspace>('/v1/workspaces', { name: name.trim() });
    await refresh();
    selectWorkspace(w.workspaceId);
    setName('');
  });
  return (
    <form class="card" onSubmit={submit} aria-labelledby="create-ws-title">
      <h2 id="create-ws-title">New workspace</h2>
      <Field label="Name of the new workspace">
        {(p) => <input {...p} name="newWorkspace" required maxLength={100} value={name} onInput={(e) => setName(val(e))} />}
      </Field>
      <ErrorMessage error={error} />
      <button type="submit" class="button" disabled={busy || !name.trim()}>
        Create workspace
      </button>
    </form>
  );
}

export function InviteForm({ onInvited }: { onInvited: () => void }) {
  const ws = useWorkspace();
  const [email, setEmail] = useState('');
  const [done, setDone] = useState<string | null>(null);
  const {
    run: submit,
    busy,
    error,
  } = useAction(async (e: Event) => {
    e.preventDefault();
    setDone(null);
    await post(`/v1/workspaces/${enc(ws.workspaceId)}/invitations`, { email: email.trim() });
    setDone(`Invitation sent to ${email.trim()}. They will see it at the top of their playground page at their next login.`);
    setEmail('');
    onInvited();
  });
  return (
    <form class="card" onSubmit={submit} aria-labelledby="invite-title">
      <h2 id="invite-title">Invite a member</h2>
      <p class="muted">The person must already have an account on this portal.</p>
      <div class="inline-form">
        <Field label="E-mail address">
          {(p) => (
            <input {...p} type="email" name="inviteEmail" autocomplete="off" required value={email} onInput={(e) => setEmail(val(e))} />
          )}
        </Field>
        <button type="submit" class="button button-primary" disabled={busy}>
          Send invitation
        </button>
      </div>
      <ErrorMessage error={error} />
      {done && <Message kind="success">{done}</Message>}
    </form>
  );
}
