import { Router } from 'express';
import type { z } from 'zod';
import { parseUsd } from '../../platform/money';
import type { Services } from '../../services';
import { validate } from '../../platform/http/contract';
import { requireMember, requireSession, userOf, workspaceOf } from '../sessions/access';
import { metaOf, settle } from './common';
import { updateKey } from './key-schemas';
import { keyListView } from './key-routes';
import { revokeInvitation } from './invitation-schemas';
import { changeRole, leaveWorkspace, roleChanged } from './schemas';
import { workspaceCommand } from './workspace-routes';

/**
 * Roles, revoking an invitation, leaving, and a key's name and monthly budget (docs/ACCOUNTS.md,
 * "Roles, leaving, revoking" and "Key budgets"). Each waits for its projections before answering.
 */
export function teamRoutes(s: Services): Router {
  const r = Router();
  const session = requireSession(s);
  const member = requireMember(s);
  const admin = requireMember(s, { admin: true });

  r.put(changeRole.path, session, admin, async (req, res) => {
    const {
      params: { userId },
      body: { role },
    } = validate(changeRole, req);
    const w = workspaceOf(res);
    const done = await workspaceCommand(s, w.workspaceId, { type: 'ChangeMemberRole', data: { userId, role, by: userOf(res).userId } }, metaOf(res));
    await settle(s, done.appended);
    res.json({ workspaceId: w.workspaceId, userId, role } satisfies z.input<typeof roleChanged>);
  });

  r.delete(revokeInvitation.path, session, admin, async (req, res) => {
    const { id } = validate(revokeInvitation, req).params;
    const w = workspaceOf(res);
    const done = await workspaceCommand(
      s,
      w.workspaceId,
      { type: 'RevokeInvitation', data: { invitationId: id, by: userOf(res).userId } },
      metaOf(res),
    );
    await settle(s, done.appended);
    res.status(204).end();
  });

  r.post(leaveWorkspace.path, session, member, async (_req, res) => {
    const w = workspaceOf(res);
    const done = await workspaceCommand(s, w.workspaceId, { type: 'LeaveWorkspace', data: { userId: userOf(res).userId } }, metaOf(res));
    await settle(s, done.appended);
    res.status(204).end();
  });

  r.patch(updateKey.path, session, member, async (req, res) => {
    const {
      params: { keyId },
      body,
    } = validate(updateKey, req);
    const w = workspaceOf(res);
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
