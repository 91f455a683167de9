import { Router } from 'express';
import { z } from 'zod';
import { KEY_NAME_MAX, KEY_NAME_MIN } from '../../domain/accounts/workspace';
import { formatUsd, isUsd, parseUsd, usd } from '../../domain/money';
import type { Services } from '../../services';
import { requireMember, requireSession, userOf, workspaceOf } from './access';
import { metaOf, nameSchema, settle } from './common';
import { keyListView } from './key-routes';
import { workspaceCommand } from './workspace-routes';

/** Highest monthly budget a key may have: far above any real spend, far below Redis's int64. */
export const MAX_KEY_BUDGET = usd(1_000_000_000);

const roleBody = z.object({ role: z.enum(['admin', 'member'], { error: 'role must be "admin" or "member"' }) });

const budgetAmount = z
  .string({ error: 'monthlyBudget must be a USD amount as a decimal string, such as "50" or "12.50", or null for no budget' })
  .refine(isUsd, 'monthlyBudget must be a USD amount as a decimal string, such as "50" or "12.50" (at most 9 decimals), or null for no budget')
  .refine((v) => !isUsd(v) || parseUsd(v) <= MAX_KEY_BUDGET, `monthlyBudget must be at most ${formatUsd(MAX_KEY_BUDGET)} USD`);

const keyPatchBody = z
  .object({
    name: nameSchema('name', { min: KEY_NAME_MIN, max: KEY_NAME_MAX, label: 'a key name' }).optional(),
    monthlyBudget: z.union([budgetAmount, z.null()]).optional(),
  })
  .refine((b) => b.name !== undefined || b.monthlyBudget !== undefined, 'Send name, monthlyBudget or both');

/**
 * Roles, revoking an invitation, leaving, and a key's name and monthly budget (docs/ACCOUNTS.md,
 * "Roles, leaving, revoking" and "Key budgets"). Each waits for its projections before answering.
 */
export function teamRoutes(s: Services): Router {
  const r = Router();
  const session = requireSession(s);
  const member = requireMember(s);
  const admin = requireMember(s, { admin: true });

  r.put('/v1/workspaces/:ws/members/:userId', session, admin, async (req, res) => {
    const { role } = roleBody.parse(req.body ?? {});
    const w = workspaceOf(res);
    const userId = String(req.params.userId);
    const done = await workspaceCommand(s, w.workspaceId, { type: 'ChangeMemberRole', data: { userId, role, by: userOf(res).userId } }, metaOf(res));
    await settle(s, done.appended);
    res.json({ workspaceId: w.workspaceId, userId, role });
  });

  r.delete('/v1/workspaces/:ws/invitations/:id', session, admin, async (req, res) => {
    const w = workspaceOf(res);
    const done = await workspaceCommand(
      s,
      w.workspaceId,
      { type: 'RevokeInvitation', data: { invitationId: String(req.params.id), by: userOf(res).userId } },
      metaOf(res),
    );
    await settle(s, done.appended);
    res.status(204).end();
  });

  r.post('/v1/workspaces/:ws/leave', session, member, async (_req, res) => {
    const w = workspaceOf(res);
    const done = await workspaceCommand(s, w.workspaceId, { type: 'LeaveWorkspace', data: { userId: userOf(res).userId } }, metaOf(res));
    await settle(s, done.appended);
    res.status(204).end();
  });

  r.patch('/v1/workspaces/:ws/keys/:keyId', session, member, async (req, res) => {
    const body = keyPatchBody.parse(req.body ?? {});
    const w = workspaceOf(res);
    const keyId = String(req.params.keyId);
    const done = await workspaceCommand(
      s,
      w.workspaceId,
      {
        type: 'UpdateApiKey',
        data: {
          keyId,
          ...(body.name !== undefined ? { name: body.name } : {}),
          ...(body.monthlyBudget !== undefined ? { monthlyBudgetNanoUsd: body.monthlyBudget === null ? null : parseUsd(body.monthlyBudget).toString() } : {}),
          by: userOf(res).userId,
        },
      },
      metaOf(res),
    );
    // The budget binds the next request: wait until the balances read model has it.
    await settle(s, done.appended);
    const view = (await keyListView(s, w.workspaceId)).find((k) => k.keyId === keyId);
    res.json(view);
  });

  return r;
}
