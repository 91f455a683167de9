import { decideWorkspace, workspaceDecider, type WorkspaceCommand } from './workspace';
import { streams } from '../platform/streams';
import { handleCommand } from '../platform/eventstore/command-handler';
import type { EventMetadata } from '../platform/eventstore/port';
import type { Services } from '../services';

/** Runs one workspace command: load → decide → append with the exact revision. */
export function workspaceCommand(s: Services, workspaceId: string, command: WorkspaceCommand, metadata: EventMetadata) {
  return handleCommand(
    s.store,
    streams.workspace(workspaceId),
    workspaceDecider,
    (st) => ({ events: decideWorkspace(st, command), result: undefined }),
    { metadata, newId: s.newId },
  );
}
