import type { Role } from '../events';
import type { EventMetadata } from '../../platform/eventstore/port';
import { runWorkspaceCommand, type WorkspaceDeps } from './workspace-command';

/** An admin gives a member another role (never demoting the last admin). */
export async function changeMemberRole(
  s: WorkspaceDeps,
  cmd: { workspaceId: string; userId: string; role: Role; by: string; metadata: EventMetadata },
): Promise<void> {
  await runWorkspaceCommand(
    s,
    cmd.workspaceId,
    { type: 'ChangeMemberRole', data: { userId: cmd.userId, role: cmd.role, by: cmd.by } },
    cmd.metadata,
  );
}
