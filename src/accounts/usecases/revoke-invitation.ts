import type { EventMetadata } from '../../platform/eventstore/port';
import { runWorkspaceCommand, type WorkspaceDeps } from './workspace-command';

/** An admin revokes a pending invitation: accepting or declining it is then a conflict. */
export async function revokeInvitation(
  s: WorkspaceDeps,
  cmd: { workspaceId: string; invitationId: string; by: string; metadata: EventMetadata },
): Promise<void> {
  await runWorkspaceCommand(
    s,
    cmd.workspaceId,
    { type: 'RevokeInvitation', data: { invitationId: cmd.invitationId, by: cmd.by } },
    cmd.metadata,
  );
}
