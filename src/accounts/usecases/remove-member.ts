import type { EventMetadata } from '../../platform/eventstore/port';
import { runWorkspaceCommand, type WorkspaceDeps } from './workspace-command';

/** An admin removes a member (never the last admin, never the owner of a personal workspace). */
export async function removeMember(
  s: WorkspaceDeps,
  cmd: { workspaceId: string; userId: string; by: string; metadata: EventMetadata },
): Promise<void> {
  await runWorkspaceCommand(s, cmd.workspaceId, { type: 'RemoveMember', data: { userId: cmd.userId, by: cmd.by } }, cmd.metadata);
}
