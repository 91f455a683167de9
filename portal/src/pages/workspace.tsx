import { useRef, useState } from 'preact/hooks';
import { del, enc, get, patch, post, put } from '../api';
import { ConfirmDialog, ErrorMessage, Field, Loading, Message, TrashIcon, useLoad } from '../components/ui';
import { dateTime } from '../format';
import { useSession, useWorkspace } from '../state';

interface Member {
  userId: string;
  email: string | null;
  name: string | null;
  role: 'admin' | 'member';
  joined: string | null;
}

interface SentInvitation {
  invitationId: string;
  email: string;
  created?: string;
  invitedBy?: { name: string | null; email: string | null };
}

const val = (e: Event) => (e.target as HTMLInputElement).value;

export function WorkspacePage() {
  const ws = useWorkspace();
  const { me, refresh } = useSession();
  const isAdmin = ws.role === 'admin';
  const members = useLoad(
    (signal) => get<{ members: Member[] }>(`/v1/workspaces/${enc(ws.workspaceId)}/members`, { signal }).then((r) => r.members),
    [ws.workspaceId],
  );
  const invitations = useLoad(
    (signal) => get<{ invitations: SentInvitation[] }>(`/v1/workspaces/${enc(ws.workspaceId)}/invitations`, { signal }).then((r) => r.invitations),
    [ws.workspaceId],
  );
  const [toRemove, setToRemove] = useState<Member | null>(null);
  const [removing, setRemoving] = useState(false);
  const [removeError, setRemoveError] = useState<unknown>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const [roleError, setRoleError] = useState<unknown>(null);
  const [roleBusy, setRoleBusy] = useState<string | null>(null);
  const [demoteSelf, setDemoteSelf] = useState(false);
  const [revokeError, setRevokeError] = useState<unknown>(null);
  const [revoking, setRevoking] = useState<string | null>(null);
  const noticeRef = useRef<HTMLDivElement>(null);
  // The last admin is not offered "Make member" (the API would refuse it: a workspace keeps an admin).
  const adminCount = (members.data ?? []).filter((m) => m.role === 'admin').length;
  const say = (text: string) => {
    setNotice(text);
    // Keyboard and screen-reader users continue from the outcome, not from a button that is gone.
    setTimeout(() => noticeRef.current?.focus(), 0);
  };

  const changeRole = async (m: Member, role: Member['role']) => {
    setRoleBusy(m.userId);
    setRoleError(null);
    setNotice(null);
    try {
      await put(`/v1/workspaces/${enc(ws.workspaceId)}/members/${enc(m.userId)}`, { role });
      const self = m.userId === me?.user.userId;
      say(self ? `You are now a member of ${ws.name}, no longer an admin.` : `${m.name ?? m.email} is now ${role === 'admin' ? 'an admin' : 'a member'} of ${ws.name}.`);
      setDemoteSelf(false);
      // Your own role decides what this page offers: re-read it.
      if (self) await refresh();
      else await members.reload();
    } catch (err) {
      setRoleError(err);
    } finally {
      setRoleBusy(null);
    }
  };

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

  const remove = async () => {
    if (!toRemove) return;
    setRemoving(true);
    setRemoveError(null);
    try {
      await del(`/v1/workspaces/${enc(ws.workspaceId)}/members/${enc(toRemove.userId)}`);
      setNotice(`${toRemove.name ?? toRemove.email} was removed from ${ws.name}.`);
      setToRemove(null);
      await members.reload();
    } catch (err) {
      setRemoveError(err);
    } finally {
      setRemoving(false);
    }
  };

  return (
    <section aria-labelledby="ws-title">
      <h1 id="ws-title">Workspace: {ws.name}</h1>
      <p class="lede">
        {ws.personal ? 'Your personal workspace. ' : ''}Members share this workspace's keys and billing. You are {isAdmin ? 'an admin' : 'a member'} here.
      </p>

      <div class="grid-2 cards">
        {isAdmin && <RenameForm />}
        <CreateForm />
      </div>

      <div ref={noticeRef} tabIndex={-1} class="focus-target">
        {notice && <Message kind="success">{notice}</Message>}
      </div>

      <div class="card">
        <h2>Members</h2>
        <ErrorMessage error={roleError} />
        {members.loading && !members.data ? (
          <Loading what="Loading members" />
        ) : members.error ? (
          <ErrorMessage error={members.error} />
        ) : (
          <div class="table-wrap">
            <table class="table table-stack" aria-label="Members">
              <thead>
                <tr>
                  <th scope="col">Name</th>
                  <th scope="col">E-mail</th>
                  <th scope="col">Role</th>
                  <th scope="col">Joined</th>
                  {isAdmin && (
                    <th scope="col">
                      <span class="visually-hidden">Remove</span>
                    </th>
                  )}
                </tr>
              </thead>
              <tbody>
                {(members.data ?? []).map((m) => (
                  <tr key={m.userId} data-testid="member-row">
                    <th scope="row">
                      {m.name ?? '—'}
                      {m.userId === me?.user.userId ? ' (you)' : ''}
                    </th>
                    <td data-label="E-mail">{m.email ?? '—'}</td>
                    <td data-label="Role">
                      <span class={`badge badge-${m.role}`}>{m.role}</span>
                    </td>
                    <td data-label="Joined">{dateTime(m.joined)}</td>
                    {isAdmin && (
                      <td class="row-actions">
                        {!ws.personal && !(m.role === 'admin' && adminCount === 1) && (
                          <button
                            type="button"
                            class="button"
                            disabled={roleBusy !== null}
                            onClick={() =>
                              m.role === 'member' ? void changeRole(m, 'admin') : m.userId === me?.user.userId ? (setRoleError(null), setDemoteSelf(true)) : void changeRole(m, 'member')
                            }
                          >
                            {m.role === 'member' ? 'Make admin' : 'Make member'}
                            <span class="visually-hidden"> ({m.userId === me?.user.userId ? 'you' : (m.name ?? m.email)})</span>
                          </button>
                        )}
                        {m.userId !== me?.user.userId && (
                          <button
                            type="button"
                            class="icon-button"
                            aria-label={`Remove ${m.name ?? m.email} from the workspace`}
                            title="Remove from the workspace"
                            onClick={() => (setRemoveError(null), setToRemove(m))}
                          >
                            <TrashIcon />
                          </button>
                        )}
                      </td>
                    )}
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </div>

      {isAdmin && !ws.personal && <InviteForm onInvited={() => (setNotice(null), void invitations.reload())} />}
      {ws.personal && (
        <Message kind="info">
          Only you belong to your personal workspace. To invite colleagues, create a team workspace above: you will be its admin.
        </Message>
      )}

      {invitations.data && invitations.data.length > 0 && (
        <div class="card">
          <h2>Pending invitations</h2>
          <ErrorMessage error={revokeError} />
          <ul class="plain-list sent-invitations">
            {invitations.data.map((i) => (
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
      )}

      {!ws.personal && <LeaveCard />}

      <ConfirmDialog
        open={demoteSelf}
        title="Stop being an admin?"
        confirmLabel="Make me a member"
        onCancel={() => setDemoteSelf(false)}
        onConfirm={() => {
          const self = members.data?.find((m) => m.userId === me?.user.userId);
          if (self) void changeRole(self, 'member');
        }}
        busy={roleBusy !== null}
        error={roleError}
      >
        <p>
          You will no longer be able to invite, remove, change roles, see the audit log or manage billing in <strong>{ws.name}</strong>. Another admin can make you an admin
          again.
        </p>
      </ConfirmDialog>

      <ConfirmDialog
        open={toRemove !== null}
        title="Remove this member?"
        confirmLabel="Remove member"
        onCancel={() => setToRemove(null)}
        onConfirm={remove}
        busy={removing}
        error={removeError}
      >
        <p>
          <strong>{toRemove?.name ?? toRemove?.email}</strong> loses access to the keys and billing of {ws.name}.
        </p>
      </ConfirmDialog>
    </section>
  );
}

/** Leaving a team workspace: the leaver's keys stay with it; the last admin is refused (409). */
function LeaveCard() {
  const ws = useWorkspace();
  const { refresh, setFlash } = useSession();
  const [open, setOpen] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const leave = async () => {
    setBusy(true);
    setError(null);
    try {
      await post(`/v1/workspaces/${enc(ws.workspaceId)}/leave`);
      setOpen(false);
      setFlash(`You left ${ws.name}. The keys you created there stay with it.`);
      await refresh();
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  return (
    <div class="card">
      <h2>Leave this workspace</h2>
      <p class="muted">You lose access to its keys, usage and billing at once. Keys you created stay with the workspace and keep working.</p>
      <button type="button" class="button button-danger-quiet" onClick={() => (setError(null), setOpen(true))}>
        Leave {ws.name}
      </button>
      <ConfirmDialog open={open} title="Leave this workspace?" confirmLabel="Leave workspace" onCancel={() => setOpen(false)} onConfirm={leave} busy={busy} error={error}>
        <p>
          You will no longer see <strong>{ws.name}</strong>. To come back, an admin must invite you again.
        </p>
      </ConfirmDialog>
    </div>
  );
}

function RenameForm() {
  const ws = useWorkspace();
  const { refresh } = useSession();
  const [name, setName] = useState(ws.name);
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const [done, setDone] = useState(false);
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    setDone(false);
    try {
      await patch(`/v1/workspaces/${enc(ws.workspaceId)}`, { name: name.trim() });
      await refresh();
      setDone(true);
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  return (
    <form class="card" onSubmit={submit} aria-labelledby="rename-title">
      <h2 id="rename-title">Rename</h2>
      <Field label="Workspace name">{(p) => <input {...p} name="workspaceName" required maxLength={100} value={name} onInput={(e) => setName(val(e))} />}</Field>
      <ErrorMessage error={error} />
      {done && <Message kind="success">Renamed.</Message>}
      <button type="submit" class="button" disabled={busy || !name.trim() || name.trim() === ws.name}>
        Rename workspace
      </button>
    </form>
  );
}

function CreateForm() {
  const { refresh, selectWorkspace } = useSession();
  const [name, setName] = useState('');
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      const w = await post<{ workspaceId: string }>('/v1/workspaces', { name: name.trim() });
      await refresh();
      selectWorkspace(w.workspaceId);
      setName('');
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  return (
    <form class="card" onSubmit={submit} aria-labelledby="create-ws-title">
      <h2 id="create-ws-title">New workspace</h2>
      <Field label="Name of the new workspace">{(p) => <input {...p} name="newWorkspace" required maxLength={100} value={name} onInput={(e) => setName(val(e))} />}</Field>
      <ErrorMessage error={error} />
      <button type="submit" class="button" disabled={busy || !name.trim()}>
        Create workspace
      </button>
    </form>
  );
}

function InviteForm({ onInvited }: { onInvited: () => void }) {
  const ws = useWorkspace();
  const [email, setEmail] = useState('');
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const [done, setDone] = useState<string | null>(null);
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    setDone(null);
    try {
      await post(`/v1/workspaces/${enc(ws.workspaceId)}/invitations`, { email: email.trim() });
      setDone(`Invitation sent to ${email.trim()}. They will see it at the top of their playground page at their next login.`);
      setEmail('');
      onInvited();
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  return (
    <form class="card" onSubmit={submit} aria-labelledby="invite-title">
      <h2 id="invite-title">Invite a member</h2>
      <p class="muted">The person must already have an account on this portal.</p>
      <div class="inline-form">
        <Field label="E-mail address">
          {(p) => <input {...p} type="email" name="inviteEmail" autocomplete="off" required value={email} onInput={(e) => setEmail(val(e))} />}
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
