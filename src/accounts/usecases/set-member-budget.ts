import type { NanoUsd } from '../../platform/money';
import type { EventMetadata } from '../../platform/eventstore/port';
import { runWorkspaceCommand, type WorkspaceDeps } from './workspace-command';

/**
 * An admin caps what one member's keys may spend together per period (null removes the cap). It
 * binds the next request: the answer waits until the balances read model has it.
 */
export async function setMemberBudget(
  s: WorkspaceDeps,
  cmd: { workspaceId: string; userId: string; budget: NanoUsd | null; period?: string; by: string; metadata: EventMetadata },
): Promise<void> {
  await runWorkspaceCommand(
    s,
    cmd.workspaceId,
    {
      type: 'SetMemberBudget',
      data: {
        userId: cmd.userId,
        budgetNanoUsd: cmd.budget === null ? null : cmd.budget.toString(),
        ...(cmd.period !== undefined ? { period: cmd.period } : {}),
        by: cmd.by,
      },
    },
    cmd.metadata,
  );
}
