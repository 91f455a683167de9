import type { NanoUsd } from '../../platform/money';
import type { EventMetadata } from '../../platform/eventstore/port';
import { runWorkspaceCommand, type WorkspaceDeps } from './workspace-command';

/**
 * A member renames a key and/or sets its monthly budget (null removes it; absent leaves either as
 * it is). The budget binds the next request: the answer waits until the balances read model has it.
 */
export async function updateKey(
  s: WorkspaceDeps,
  cmd: { workspaceId: string; keyId: string; name?: string; monthlyBudget?: NanoUsd | null; by: string; metadata: EventMetadata },
): Promise<void> {
  const { keyId, name, monthlyBudget } = cmd;
  await runWorkspaceCommand(
    s,
    cmd.workspaceId,
    {
      type: 'UpdateApiKey',
      data: {
        keyId,
        ...(name !== undefined ? { name } : {}),
        ...(monthlyBudget !== undefined ? { monthlyBudgetNanoUsd: monthlyBudget === null ? null : monthlyBudget.toString() } : {}),
        by: cmd.by,
      },
    },
    cmd.metadata,
  );
}
