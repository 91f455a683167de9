import { Router } from 'express';
import type { z } from 'zod';
import { memberBudgets } from '../../billing';
import { formatUsd, parseUsd } from '../../platform/money';
import { mount } from '../../platform/http/mount';
import type { Services } from '../../services';
import { budgetLeft } from '../budget';
import { requireMember, requireSession, userOf, workspaceOf } from '../sessions/access';
import { metaOf } from './common';
import * as uc from '../usecases';
import { memberBudgetAnswer, memberBudgetView, setMemberBudget } from './member-budget-schemas';

/** Each member's budget as the API shows it (members without one are absent), at the service's clock. */
export async function memberBudgetViews(
  s: Services,
  workspaceId: string,
  userIds: string[],
): Promise<Map<string, z.input<typeof memberBudgetView>>> {
  const status = await memberBudgets(s.readModels, s.ks, workspaceId, userIds, s.now());
  return new Map(
    [...status].map(([u, b]) => [
      u,
      {
        budget: formatUsd(b.budget),
        period: b.period,
        periodId: b.periodId,
        spent: formatUsd(b.spent),
        remaining: formatUsd(budgetLeft(b.budget, b.spent, b.held)),
        resetsAt: b.resetsAt,
      },
    ]),
  );
}

/** PUT /v1/workspaces/:ws/members/:userId/budget (admins). */
export function memberBudgetRoutes(s: Services): Router {
  const r = Router();
  mount(r, setMemberBudget, requireSession(s), requireMember(s, { admin: true }), async (_req, res, { params: { userId }, body }) => {
    const { workspaceId } = workspaceOf(res);
    await uc.setMemberBudget(s, {
      workspaceId,
      userId,
      budget: body.budget === null ? null : parseUsd(body.budget),
      ...(body.period !== undefined ? { period: body.period } : {}),
      by: userOf(res).userId,
      metadata: metaOf(res),
    });
    const view = (await memberBudgetViews(s, workspaceId, [userId])).get(userId) ?? null;
    res.json({ workspaceId, userId, budget: view } satisfies z.input<typeof memberBudgetAnswer>);
  });
  return r;
}
