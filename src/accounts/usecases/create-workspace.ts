import type { EventMetadata } from '../../platform/eventstore/port';
import { runWorkspaceCommand, type WorkspaceDeps } from './workspace-command';

/** A new shared workspace; its creator is its first admin. */
export async function createWorkspace(
  s: WorkspaceDeps,
  cmd: { name: string; by: string; metadata: EventMetadata },
): Promise<{ workspaceId: string }> {
  const workspaceId = s.newId();
  await runWorkspaceCommand(
    s,
    workspaceId,
    { type: 'CreateWorkspace', data: { workspaceId, name: cmd.name, personal: false, by: cmd.by } },
    cmd.metadata,
  );
  return { workspaceId };
}
