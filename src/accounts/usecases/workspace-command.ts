import { decideWorkspace, workspaceDecider, type WorkspaceCommand } from '../workspace';
import { streams } from '../../platform/streams';
import { handleCommand } from '../../platform/eventstore/command-handler';
import type { EventMetadata } from '../../platform/eventstore/port';
import { readYourWrites } from '../../platform/projections/read-your-writes';
import type { Services } from '../../services';

/** What a workspace use case needs: the store, ids, and the projections' progress to wait on. */
export type WorkspaceDeps = Pick<Services, 'store' | 'newId' | 'progress' | 'config' | 'log' | 'lookupHash'>;

/**
 * One workspace command: load workspace-{id} → decide → append with the exact revision, then wait
 * until the projections applied it (read-your-writes), so the next request sees the change: a new
 * key works, a deleted one fails, a new member is listed.
 */
export async function runWorkspaceCommand(s: WorkspaceDeps, workspaceId: string, command: WorkspaceCommand, metadata: EventMetadata) {
  const done = await handleCommand(
    s.store,
    streams.workspace(workspaceId),
    workspaceDecider,
    (st) => ({ events: decideWorkspace(command, st), result: undefined }),
    { metadata, newId: s.newId },
  );
  await readYourWrites(s, done.appended);
  return done;
}
