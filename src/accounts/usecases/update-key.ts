import type { NanoUsd } from '../../platform/money';
import type { EventMetadata } from '../../platform/eventstore/port';
import { runWorkspaceCommand, type WorkspaceDeps } from './workspace-command';

/**
 * A member renames a key and/or sets its budget and the period it resets by (null removes the
 * budget; absent leaves each as it is). The budget binds the next request: the answer waits until
 * the balances read model has it.
 */
export async function updateKey(
  s: WorkspaceDeps,
  cmd: {
    workspaceId: string;
    keyId: string;
    name?: string;
    budget?: NanoUsd | null;
    budgetPeriod?: string;
    by: string;
    metadata: EventMetadata;
  },
): Promise<void> {
  const { keyId, name, budget, budgetPeriod } = cmd;
  await runWorkspaceCommand(
    s,
    cmd.workspaceId,
    {
      type: 'UpdateApiKey',
      data: {
        keyId,
        ...(name !== undefined ? { name } : {}),
        ...(budget !== undefined ? { budgetNanoUsd: budget === null ? null : budget.toString() } : {}),
        ...(budgetPeriod !== undefined ? { budgetPeriod } : {}),
        by: cmd.by,
      },
    },
    cmd.metadata,
  );
}
