import { Router } from 'express';
import type { z } from 'zod';
import { parseUsd } from '../../platform/money';
import type { Services } from '../../services';
import { mount } from '../../platform/http/mount';
import { requireMember, requireSession, userOf, workspaceOf } from '../sessions/access';
import { metaOf } from './common';
import * as uc from '../usecases';
import { updateKey } from './key-schemas';
import { keyListView } from './key-routes';
import { revokeInvitation } from './invitation-schemas';
import { changeRole, leaveWorkspace, roleChanged } from './schemas';

/**
 * Roles, revoking an invitation, leaving, a key's name and budget, and a member's budget
 * (docs/ACCOUNTS.md, "Roles, leaving, revoking" and "Budgets"). Each waits for its projections
 * before answering.
 */
export function teamRoutes(s: Services): Router {
  const r = Router();
  const session = requireSession(s);
  const member = requireMember(s);
  const admin = requireMember(s, { admin: true });

  mount(r, changeRole, session, admin, async (_req, res, { params: { userId }, body: { role } }) => {
    const w = workspaceOf(res);
    await uc.changeMemberRole(s, { workspaceId: w.workspaceId, userId, role, by: userOf(res).userId, metadata: metaOf(res) });
    res.json({ workspaceId: w.workspaceId, userId, role } satisfies z.input<typeof roleChanged>);
  });

  mount(r, revokeInvitation, session, admin, async (_req, res, { params: { id } }) => {
    await uc.revokeInvitation(s, {
      workspaceId: workspaceOf(res).workspaceId,
      invitationId: id,
      by: userOf(res).userId,
      metadata: metaOf(res),
    });
    res.status(204).end();
  });

  mount(r, leaveWorkspace, session, member, async (_req, res) => {
    await uc.leaveWorkspace(s, { workspaceId: workspaceOf(res).workspaceId, userId: userOf(res).userId, metadata: metaOf(res) });
    res.status(204).end();
  });

  mount(r, updateKey, session, member, async (_req, res, { params: { keyId }, body }) => {
    const w = workspaceOf(res);
    // monthlyBudget (before periods) is a budget whose period is monthly.
    const amount = body.monthlyBudget !== undefined ? body.monthlyBudget : body.budget;
    const period = body.monthlyBudget !== undefined && body.monthlyBudget !== null ? 'monthly' : body.budgetPeriod;
    await uc.updateKey(s, {
      workspaceId: w.workspaceId,
      keyId,
      ...(body.name !== undefined ? { name: body.name } : {}),
      ...(amount !== undefined ? { budget: amount === null ? null : parseUsd(amount) } : {}),
      ...(period !== undefined ? { budgetPeriod: period } : {}),
      by: userOf(res).userId,
      metadata: metaOf(res),
    });
    const view = (await keyListView(s, w.workspaceId)).find((k) => k.keyId === keyId);
    res.json(view);
  });

  return r;
}
