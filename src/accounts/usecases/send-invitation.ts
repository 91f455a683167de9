import { notFound } from '../../platform/errors';
import type { EventMetadata } from '../../platform/eventstore/port';
import { userByEmail } from './user-by-email';
import { runWorkspaceCommand, type WorkspaceDeps } from './workspace-command';

/** An admin invites someone who has an account (the e-mail claim names the user). */
export async function sendInvitation(
  s: WorkspaceDeps,
  cmd: { workspaceId: string; email: string; by: string; metadata: EventMetadata },
): Promise<{ invitationId: string }> {
  const { workspaceId, email, by } = cmd;
  const invitee = await userByEmail(s, email);
  if (!invitee?.registered) throw notFound(`No account uses ${email}: the person must sign up before they can be invited`);
  const invitationId = s.newId();
  await runWorkspaceCommand(
    s,
    workspaceId,
    { type: 'InviteMember', data: { invitationId, email, inviteeUserId: invitee.userId, by } },
    cmd.metadata,
  );
  return { invitationId };
}
