import type { EventMetadata } from '../../platform/eventstore/port';
import { runWorkspaceCommand, type WorkspaceDeps } from './workspace-command';

/** A member leaves (not the last admin, not a personal workspace). */
export async function leaveWorkspace(
  s: WorkspaceDeps,
  cmd: { workspaceId: string; userId: string; metadata: EventMetadata },
): Promise<void> {
  await runWorkspaceCommand(s, cmd.workspaceId, { type: 'LeaveWorkspace', data: { userId: cmd.userId } }, cmd.metadata);
}
