import type { EventMetadata } from '../../platform/eventstore/port';
import { runWorkspaceCommand, type WorkspaceDeps } from './workspace-command';

/** An admin renames the workspace (the same name again changes nothing). */
export async function renameWorkspace(
  s: WorkspaceDeps,
  cmd: { workspaceId: string; name: string; by: string; metadata: EventMetadata },
): Promise<void> {
  await runWorkspaceCommand(s, cmd.workspaceId, { type: 'RenameWorkspace', data: { name: cmd.name, by: cmd.by } }, cmd.metadata);
}
