import type { EventMetadata } from '../../platform/eventstore/port';
import { runWorkspaceCommand, type WorkspaceDeps } from './workspace-command';

/** An operator sets a key's requests per minute (null: back to RATE_LIMIT_PER_MINUTE). */
export async function setRateLimit(
  s: WorkspaceDeps,
  cmd: { workspaceId: string; keyId: string; requestsPerMinute: number | null; metadata: EventMetadata },
): Promise<void> {
  await runWorkspaceCommand(
    s,
    cmd.workspaceId,
    { type: 'ChangeRateLimit', data: { keyId: cmd.keyId, requestsPerMinute: cmd.requestsPerMinute, by: 'operator' } },
    cmd.metadata,
  );
}
