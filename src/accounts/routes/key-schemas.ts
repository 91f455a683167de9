import { z } from 'zod';
import { KEY_NAME_MAX, KEY_NAME_MIN, ROLL_GRACE_MAX_SECONDS } from '../workspace';
import { formatUsd, isUsd, parseUsd, usd } from '../../platform/money';
import { BUDGET_PERIODS } from '../../platform/budget-periods';
import { route, type RouteContract } from '../../platform/http/contract';
import { invalidInput, problem } from '../../platform/http/error-bodies';
import { memberErrors, memberWriteErrors, nameSchema, wsParams } from './fields';

/** The API-key routes' contracts: list, create, delete, roll, and a key's name and budget (with its period). */

/** The scopes a key may carry. `inference` is what the two inference endpoints require. */
export const KEY_SCOPES = ['inference'] as const;

/** Highest budget a key (or a member) may have: far above any real spend, far below Redis's int64. */
export const MAX_KEY_BUDGET = usd(1_000_000_000);

const usdAmount = z.string().describe('USD, a decimal string');

// ---- responses ----------------------------------------------------------------------------------

export const keyRoll = z.object({ prefix: z.string(), last4: z.string(), rolledAt: z.string(), previousSecretValidUntil: z.string() });

/** daily (00:00 UTC), weekly (Monday 00:00 UTC) or monthly (the 1st, 00:00 UTC). */
export const budgetPeriod = z
  .enum(BUDGET_PERIODS, { error: `budgetPeriod must be one of ${BUDGET_PERIODS.join(', ')}` })
  .describe('When the budget resets: daily (00:00 UTC), weekly (Monday 00:00 UTC) or monthly (the 1st, 00:00 UTC)');

/** A key as GET …/keys lists it, with its budget, its spend in the budget's period and what is left. */
export const keyView = z.object({
  keyId: z.string(),
  name: z.string(),
  prefix: z.string(),
  last4: z.string(),
  scopes: z.array(z.string()),
  created: z.string(),
  createdBy: z.object({ userId: z.string(), name: z.string().nullable() }),
  expiresAt: z.string().nullable(),
  expired: z.boolean(),
  lastUsed: z.string().nullable(),
  lastRoll: keyRoll.nullable(),
  budget: usdAmount.nullable().describe('The spend cap per period, or null for none'),
  budgetPeriod: budgetPeriod.nullable().describe('The period the budget resets by; null without a budget'),
  /** The current period's id: "2026-11-25", "2026-W48" or "2026-11". */
  budgetPeriodId: z.string().nullable(),
  budgetSpent: usdAmount.nullable().describe('Spent in the budget’s current period'),
  budgetResetsAt: z.string().nullable().describe('ISO UTC: when the current period ends'),
  /** What the next request can still use: requests in flight hold part of the budget too. */
  budgetRemaining: usdAmount.nullable(),
  monthlyBudget: usdAmount
    .nullable()
    .describe('The budget when its period is monthly, else null (kept for clients written before periods)'),
  /** YYYY-MM, UTC. */
  spendMonth: z.string(),
  monthToDateSpend: usdAmount,
});
export const keyList = z.object({ keys: z.array(keyView) });

/** A new key: the only answer that ever holds its secret. */
export const keyCreated = z.object({
  keyId: z.string(),
  name: z.string(),
  prefix: z.string(),
  last4: z.string(),
  scopes: z.array(z.string()),
  expiresAt: z.string().nullable(),
  created: z.string(),
  createdBy: z.object({ userId: z.string(), name: z.string() }),
  secret: z.string(),
});

export const keyRolled = z.object({
  keyId: z.string(),
  name: z.string().nullable(),
  scopes: z.array(z.string()).nullable(),
  expiresAt: z.string().nullable(),
  prefix: z.string(),
  last4: z.string(),
  rolledAt: z.string(),
  gracePeriodSeconds: z.number(),
  previousSecretValidUntil: z.string(),
  secret: z.string(),
});

// ---- requests -----------------------------------------------------------------------------------

const keyName = nameSchema('name', { min: KEY_NAME_MIN, max: KEY_NAME_MAX, label: 'a key name' });
const expiresAt = z.union([z.iso.datetime({ offset: true }), z.null()]).optional();
const createFields = {
  name: keyName,
  scopes: z
    .array(z.enum(KEY_SCOPES))
    .max(KEY_SCOPES.length * 2)
    .optional(),
};

/** As documented; the route also checks that expiresAt lies in the future (pastExpiry). */
export const keyCreateBody = z.object({
  ...createFields,
  expiresAt: expiresAt.describe('ISO-8601 with offset, in the future; null or absent: never'),
});
/** An expiresAt that does not lie after `now` (the service's clock, so not in the static schema), as the schema would answer it. */
export const pastExpiry = (expiresAt: string | null | undefined, now: Date) =>
  expiresAt != null && !(Date.parse(expiresAt) > now.getTime())
    ? [{ loc: ['body', 'expiresAt'], msg: 'expiresAt must lie in the future', type: 'custom' }]
    : null;

export const rollBody = z.object({
  gracePeriodSeconds: z
    .number({ error: `gracePeriodSeconds must be a whole number of seconds from 0 to ${ROLL_GRACE_MAX_SECONDS}` })
    .int(`gracePeriodSeconds must be a whole number of seconds from 0 to ${ROLL_GRACE_MAX_SECONDS}`)
    .min(0, `gracePeriodSeconds must be at least 0`)
    .max(ROLL_GRACE_MAX_SECONDS, `gracePeriodSeconds must be at most ${ROLL_GRACE_MAX_SECONDS} (24 hours)`)
    .default(0),
});

/** A budget amount field (`field` names it in the messages). */
export const budgetAmount = (field: string) =>
  z
    .string({ error: `${field} must be a USD amount as a decimal string, such as "50" or "12.50", or null for no budget` })
    .refine(isUsd, `${field} must be a USD amount as a decimal string, such as "50" or "12.50" (at most 9 decimals), or null for no budget`)
    .refine((v) => !isUsd(v) || parseUsd(v) <= MAX_KEY_BUDGET, `${field} must be at most ${formatUsd(MAX_KEY_BUDGET)} USD`);

export const keyPatchBody = z
  .object({
    name: keyName.optional(),
    budget: z.union([budgetAmount('budget'), z.null()]).optional(),
    budgetPeriod: budgetPeriod.optional().describe('Absent: the key keeps its period (monthly for a new budget)'),
    monthlyBudget: z
      .union([budgetAmount('monthlyBudget'), z.null()])
      .optional()
      .describe('Before periods: the same as budget with budgetPeriod "monthly"'),
  })
  .refine(
    (b) => b.name !== undefined || b.budget !== undefined || b.budgetPeriod !== undefined || b.monthlyBudget !== undefined,
    'Send name, budget, budgetPeriod or several',
  )
  .refine((b) => b.budget === undefined || b.monthlyBudget === undefined, 'Send budget or monthlyBudget, not both')
  .refine(
    (b) => b.monthlyBudget === undefined || b.budgetPeriod === undefined || b.budgetPeriod === 'monthly',
    'monthlyBudget is a monthly budget: send budget with that budgetPeriod instead',
  );

// ---- contracts ----------------------------------------------------------------------------------

const keyParams = wsParams.extend({ keyId: z.string() });

export const listKeys = route({
  method: 'get',
  path: '/v1/workspaces/:ws/keys',
  summary: 'The workspace’s API keys',
  description:
    'Every key: name, prefix and last four characters, creator, scopes, expiry, budget and its period, and when it was last used and rolled. A secret is shown only when it is created or rolled.',
  tags: ['API keys'],
  security: ['session'],
  params: wsParams,
  responses: { 200: { description: 'Oldest first; never a secret', schema: keyList }, ...memberErrors },
});

export const createKey = route({
  method: 'post',
  path: '/v1/workspaces/:ws/keys',
  summary: 'Create an API key (funded workspace, accepted usage policy)',
  description:
    'The secret is in this answer only; store it. The workspace needs a balance and the caller must have accepted the current usage policy (403 otherwise).',
  tags: ['API keys'],
  security: ['session'],
  params: wsParams,
  body: keyCreateBody,
  responses: {
    201: { description: 'The key with its secret, shown this once', schema: keyCreated },
    402: problem('The workspace is not funded: a card and the initial deposit first'),
    ...memberWriteErrors,
    403: problem('The usage policy is not accepted, or a cookie write without X-Requested-With'),
    409: problem('This key already exists'),
    422: invalidInput(),
  },
});

export const deleteKey = route({
  method: 'delete',
  path: '/v1/workspaces/:ws/keys/:keyId',
  summary: 'Delete an API key: it fails on the next request',
  description: 'The key answers 401 from its next request on, in every process. Its receipts and usage stay readable.',
  tags: ['API keys'],
  security: ['session'],
  params: keyParams,
  responses: {
    204: { description: 'Deleted' },
    ...memberWriteErrors,
    403: problem(
      'A cookie-authenticated write without X-Requested-With or a same-origin Origin, or a member who did not create the key (only its creator or an admin may delete it)',
    ),
    404: problem('Workspace or API key not found'),
  },
});

export const rollKey = route({
  method: 'post',
  path: '/v1/workspaces/:ws/keys/:keyId/roll',
  summary: 'A new secret for the same key; the old one works for gracePeriodSeconds',
  description:
    "Rolls the secret without changing the key's id, budget or usage; the new secret is in this answer only. The old secret keeps working for gracePeriodSeconds (0 ends it at once).",
  tags: ['API keys'],
  security: ['session'],
  params: keyParams,
  body: rollBody,
  responses: {
    200: { description: 'The new secret, shown this once', schema: keyRolled },
    ...memberWriteErrors,
    403: problem(
      'A cookie-authenticated write without X-Requested-With or a same-origin Origin, or a member who did not create the key (only its creator or an admin may roll it)',
    ),
    404: problem('Workspace or API key not found'),
    409: problem('The key has expired'),
    422: invalidInput(),
  },
});

export const updateKey = route({
  method: 'patch',
  path: '/v1/workspaces/:ws/keys/:keyId',
  summary: 'Rename a key or set its budget and the period it resets by',
  description:
    'Any of `name`, `budgetUsd` (null removes the budget) and `budgetPeriod`. A budget is checked at admission with the balance; a spent one refuses with 402 naming the budget.',
  tags: ['API keys'],
  security: ['session'],
  params: keyParams,
  body: keyPatchBody,
  responses: {
    200: { description: 'The key as the list shows it', schema: keyView },
    ...memberWriteErrors,
    404: problem('Workspace or API key not found'),
    422: invalidInput(),
  },
});

export const budgetLayerView = z
  .object({
    scope: z.enum(['balance', 'key', 'member']).describe('The workspace balance, the key’s budget, or its creator’s member budget'),
    limit: z
      .string()
      .regex(/^-?\d+(\.\d{1,9})?$/)
      .describe('The balance itself for `balance` (negative if the ledger went below zero); the budget for the others'),
    period: z.enum(BUDGET_PERIODS).nullable().describe('The budget’s period (UTC); null for the balance'),
    spent: usdAmount.nullable().describe('Spent in the current period; null for the balance'),
    held: usdAmount.describe('Held by requests in flight that count against this layer'),
    remaining: usdAmount.describe('What the next request can still hold (never negative)'),
    resetsAt: z.string().nullable().describe('When the period ends and spending starts again from zero; null for the balance'),
    userId: z.string().optional().describe('The member, for `member`'),
  })
  .meta({ id: 'BudgetLayer' });

export const keyBudgets = route({
  method: 'get',
  path: '/v1/workspaces/:ws/keys/:keyId/budgets',
  summary: 'Every budget layer that applies to a key, in the order admission checks them',
  description:
    'The balance, then the key’s budget, then its creator’s member budget (a budget layer only when that budget is set), each with its limit, spend in the current period, what requests in flight hold, what is left and when it resets. `tightest` is the layer with the least left: the most the next request may hold. Read-only; the same figures the 402 of a refused request shows.',
  tags: ['API keys'],
  security: ['session'],
  params: keyParams,
  responses: {
    200: {
      description: 'The layers, in enforcement order',
      schema: z.object({
        keyId: z.string(),
        layers: z.array(budgetLayerView),
        tightest: z.object({ scope: z.enum(['balance', 'key', 'member']), remaining: usdAmount }),
      }),
    },
    ...memberErrors,
    404: problem('Workspace or API key not found'),
  },
});

export const keyContracts: RouteContract[] = [listKeys, createKey, deleteKey, rollKey, updateKey, keyBudgets];
