import type { Role } from '../events';
import { notFound } from '../../platform/errors';
import type { EventMetadata } from '../../platform/eventstore/port';
import { invitation } from '../projections/invitations/queries';
import { roleOf, workspaceInfo } from '../projections/memberships/queries';
import type { Services } from '../../services';
import { runWorkspaceCommand, type WorkspaceDeps } from './workspace-command';

export interface InvitationAnswer {
  invitationId: string;
  workspaceId: string;
  workspaceName: string | null;
  /** The invitee's role in the workspace afterwards (null when not a member). */
  role: Role | null;
}

type Deps = WorkspaceDeps & Pick<Services, 'readModels'>;
type Answer = { invitationId: string; userId: string; metadata: EventMetadata };

/** The invitee answers an invitation found by id; someone else's invitation is as invisible as a missing one. */
export async function answerInvitation(s: Deps, type: 'AcceptInvitation' | 'DeclineInvitation', cmd: Answer): Promise<InvitationAnswer> {
  const inv = await invitation(s.readModels, cmd.invitationId);
  if (!inv || inv.userId !== cmd.userId) throw notFound('Invitation not found');
  await runWorkspaceCommand(s, inv.workspaceId, { type, data: { invitationId: inv.invitationId, userId: cmd.userId } }, cmd.metadata);
  const [ws, role] = await Promise.all([workspaceInfo(s.readModels, inv.workspaceId), roleOf(s.readModels, inv.workspaceId, cmd.userId)]);
  return { invitationId: inv.invitationId, workspaceId: inv.workspaceId, workspaceName: ws?.name ?? null, role };
}

/** The invitee joins the workspace as a member (or keeps the role they already have). */
export const acceptInvitation = (s: Deps, cmd: Answer) => answerInvitation(s, 'AcceptInvitation', cmd);
