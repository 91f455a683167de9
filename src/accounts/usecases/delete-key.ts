import type { EventMetadata } from '../../platform/eventstore/port';
import { forgetKeyLastUsed } from '../key-last-used';
import type { Services } from '../../services';
import { runWorkspaceCommand, type WorkspaceDeps } from './workspace-command';

/** The key's creator or an admin deletes a key: it fails on the next request (the answer waits until the key index dropped it). */
export async function deleteKey(
  s: WorkspaceDeps & Pick<Services, 'redis' | 'ks'>,
  cmd: { workspaceId: string; keyId: string; by: string; metadata: EventMetadata },
): Promise<void> {
  await runWorkspaceCommand(s, cmd.workspaceId, { type: 'DeleteApiKey', data: { keyId: cmd.keyId, by: cmd.by } }, cmd.metadata);
  await forgetKeyLastUsed(s.redis, s.ks, cmd.keyId);
}
