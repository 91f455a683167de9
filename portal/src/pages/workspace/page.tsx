import { useRef, useState } from 'preact/hooks';
import { del, enc, get, put } from '../../api';
import type { InvitationList, Member, MemberList } from '../../api-types';
import { ConfirmDialog, ErrorMessage, Link, Loading, Message, TrashIcon, useLoad } from '../../components/ui';
import { WEBHOOKS_PATH } from '../webhooks/page';
import { dateTime } from '../../format';
import { useSession, useWorkspace } from '../../state';
import { CreateForm, InviteForm, LeaveCard, RenameForm } from './forms';
import { SentInvitations } from './sent-invitations';
import { MemberBudget, MemberBudgetDialog } from './member-budget';
import { useAction } from '../../action';

export function WorkspacePage() {
  const ws = useWorkspace();
  const { me, refresh } = useSession();
  const isAdmin = ws.role === 'admin';
  const members = useLoad(
    (signal) => get<MemberList>(`/v1/workspaces/${enc(ws.workspaceId)}/members`, { signal }).then((r) => r.members),
    [ws.workspaceId],
  );
  const invitations = useLoad(
    (signal) => get<InvitationList>(`/v1/workspaces/${enc(ws.workspaceId)}/invitations`, { signal }).then((r) => r.invitations),
    [ws.workspaceId],
  );
  const [toRemove, setToRemove] = useState<Member | null>(null);
  const [budgetOf, setBudgetOf] = useState<Member | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const [demoteSelf, setDemoteSelf] = useState(false);
  const noticeRef = useRef<HTMLDivElement>(null);
  // The last admin is not offered "Make member" (the API would refuse it: a workspace keeps an admin).
  const adminCount = (members.data ?? []).filter((m) => m.role === 'admin').length;
  const say = (text: string) => {
    setNotice(text);
    // Keyboard and screen-reader users continue from the outcome, not from a button that is gone.
    setTimeout(() => noticeRef.current?.focus(), 0);
  };

  const {
    run: changeRole,
    running: roleRun,
    error: roleError,
    setError: setRoleError,
  } = useAction(async (m: Member, role: Member['role']) => {
    setNotice(null);
    await put(`/v1/workspaces/${enc(ws.workspaceId)}/members/${enc(m.userId)}`, { role });
    const self = m.userId === me?.user.userId;
    say(
      self
        ? `You are now a member of ${ws.name}, no longer an admin.`
        : `${m.name ?? m.email} is now ${role === 'admin' ? 'an admin' : 'a member'} of ${ws.name}.`,
    );
    setDemoteSelf(false);
    // Your own role decides what this page offers: re-read it.
    if (self) await refresh();
    else await members.reload();
  });
  const roleBusy = roleRun?.[0].userId ?? null;

  const {
    run: remove,
    busy: removing,
    error: removeError,
    setError: setRemoveError,
  } = useAction(async () => {
    if (!toRemove) return;
    await del(`/v1/workspaces/${enc(ws.workspaceId)}/members/${enc(toRemove.userId)}`);
    setNotice(`${toRemove.name ?? toRemove.email} was removed from ${ws.name}.`);
    setToRemove(null);
    await members.reload();
  });

  return (
    <section aria-labelledby="ws-title">
      <h1 id="ws-title">Workspace: {ws.name}</h1>
      <p class="lede">
        {ws.personal ? 'Your personal workspace. ' : ''}Members share this workspace's keys and billing. You are{' '}
        {isAdmin ? 'an admin' : 'a member'} here.
      </p>
      {isAdmin && (
        <p>
          <Link href={WEBHOOKS_PATH}>Webhooks</Link>: signed notifications to your systems, and the low-balance alert.
        </p>
      )}

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
                  <th scope="col">Budget</th>
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
                    <td data-label="Budget">
                      <MemberBudget m={m} />
                    </td>
                    {isAdmin && (
                      <td class="row-actions">
                        <button type="button" class="button" onClick={() => setBudgetOf(m)}>
                          Budget<span class="visually-hidden"> for {m.userId === me?.user.userId ? 'you' : (m.name ?? m.email)}</span>
                        </button>
                        {!ws.personal && !(m.role === 'admin' && adminCount === 1) && (
                          <button
                            type="button"
                            class="button"
                            disabled={roleBusy !== null}
                            onClick={() =>
                              m.role === 'member'
                                ? void changeRole(m, 'admin')
                                : m.userId === me?.user.userId
                                  ? (setRoleError(null), setDemoteSelf(true))
                                  : void changeRole(m, 'member')
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

      <SentInvitations invitations={invitations} isAdmin={isAdmin} say={say} />

      {!ws.personal && <LeaveCard />}

      <MemberBudgetDialog
        workspaceId={ws.workspaceId}
        m={budgetOf}
        onClose={() => setBudgetOf(null)}
        onSaved={(message) => {
          setBudgetOf(null);
          say(message);
          void members.reload();
        }}
      />

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
          You will no longer be able to invite, remove, change roles, see the audit log or manage billing in <strong>{ws.name}</strong>.
          Another admin can make you an admin again.
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
