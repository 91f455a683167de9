import { z } from 'zod';
import { route } from '../../platform/http/contract';
import { invalidInput, problem } from '../../platform/http/error-bodies';
import { budgetAmount, budgetPeriod } from './key-schemas';
import { memberWriteErrors, wsParams } from './fields';

/**
 * A member's budget: what all the keys a member created in a workspace may spend together per
 * period. Set by admins; listed with the members (GET …/members).
 */
const usdAmount = z.string().describe('USD, a decimal string');

export const memberBudgetView = z.object({
  budget: usdAmount,
  period: budgetPeriod,
  /** "2026-11-25", "2026-W48" or "2026-11". */
  periodId: z.string(),
  spent: usdAmount.describe('Spent by the member’s keys in the current period'),
  remaining: usdAmount.describe('What the next request can still use: requests in flight hold part of it'),
  resetsAt: z.string().describe('ISO UTC: when the current period ends'),
});

export const memberBudgetAnswer = z.object({ workspaceId: z.string(), userId: z.string(), budget: memberBudgetView.nullable() });

export const memberBudgetBody = z.object({
  budget: z.union([budgetAmount('budget'), z.null()], {
    error: 'budget must be a USD amount as a decimal string, or null to remove the budget',
  }),
  period: budgetPeriod.optional().describe('Absent: the member keeps the budget’s period (monthly for a new budget)'),
});

export const setMemberBudget = route({
  method: 'put',
  path: '/v1/workspaces/:ws/members/:userId/budget',
  summary: 'Cap what a member’s keys may spend together per period (admins)',
  description:
    "A budget over every key the member created, checked at admission beside each key's own budget; a refusal is a 402 that names the member budget. `null` removes it.",
  tags: ['Workspaces'],
  security: ['session'],
  params: wsParams.extend({ userId: z.string() }),
  body: memberBudgetBody,
  responses: {
    200: { description: 'The member’s budget now (null: none)', schema: memberBudgetAnswer },
    ...memberWriteErrors,
    404: problem('Workspace or member not found'),
    422: invalidInput(),
  },
});
