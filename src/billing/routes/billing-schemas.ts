import { z } from 'zod';
import { isWholeCents, MIN_RELOAD } from '../rules';
import { formatUsd, isUsd, parseUsd } from '../../platform/money';
import { memberErrors, memberWriteErrors, wsParams } from '../../accounts/routes';
import { route, type RouteContract } from '../../platform/http/contract';
import { invalidInput, problem } from '../../platform/http/error-bodies';
import { usageContracts } from './usage-schemas';
import { statementContracts } from './statement-schemas';

export * from './usage-schemas';

/**
 * The billing area's route contracts (usage in usage-schemas.ts): request and response schemas,
 * and the list the OpenAPI document is built from. Amounts are USD decimal strings, never floats.
 */

const usd = z.string().describe('USD, a decimal string');
const gatewayKind = z.enum(['stripe', 'sandbox']);

// ---- responses ----------------------------------------------------------------------------------

export const paymentMethodView = z.object({ id: z.string(), brand: z.string(), last4: z.string() });

export const autoReloadView = z.object({
  enabled: z.boolean(),
  threshold: usd,
  amount: usd,
  monthlyCap: usd.nullable(),
  status: z.enum(['disabled', 'suspended', 'reloading', 'active']),
  suspendedReason: z.string().nullable(),
  suspendedAt: z.string().nullable(),
  reloadedThisMonth: usd,
});

/** GET …/billing: balance, what is held by requests in flight, what is on file. */
export const billingViewBody = z.object({
  workspaceId: z.string(),
  mode: gatewayKind,
  /** Only in sandbox mode. */
  modeNote: z.string().optional(),
  balance: usd,
  reserved: usd,
  available: usd,
  deposited: usd,
  reloaded: usd,
  granted: usd.describe('Promotional credit granted by operators (GET …/billing/credit-grants lists every grant)'),
  expired: usd.describe('What expiring grants took out of the balance'),
  spent: usd,
  funded: z.boolean(),
  initialDeposit: usd,
  minimumDeposit: usd,
  paymentMethod: paymentMethodView.nullable(),
  autoReload: autoReloadView.nullable(),
});

export const depositView = z.object({
  depositId: z.string(),
  status: z.enum(['requested', 'succeeded', 'failed', 'pending']),
  amount: usd,
  paymentIntentId: z.string().nullable(),
  code: z.string().nullable(),
  reason: z.string().nullable(),
  requestedAt: z.string(),
});

export const depositSucceeded = z.object({ deposit: depositView, mode: gatewayKind, billing: billingViewBody });
export const depositPending = z.object({ deposit: depositView, mode: gatewayKind, detail: z.string() });
export const depositFailed = z.object({ detail: z.string(), deposit: depositView, mode: gatewayKind });
export const depositList = z.object({ deposits: z.array(depositView), minimumDeposit: usd });
export const paymentMethodAttached = z.object({ paymentMethod: paymentMethodView, mode: gatewayKind });

export const ledgerEntryView = z.object({
  /** Global position of the event: a stable, ordered id. */
  position: z.string(),
  at: z.string(),
  type: z.enum(['DepositSucceeded', 'AutoReloadSucceeded', 'CreditGranted', 'CreditNoteIssued', 'CreditExpired', 'TokensDebited']),
  /** depositId, reloadId, grantId or requestId. */
  ref: z.string(),
  /** Signed nano-USD: + for deposits, reloads and granted credit, − for debits and expiries. */
  amountNanoUsd: z.string(),
  balanceNanoUsd: z.string(),
  paymentIntentId: z.string().optional(),
  by: z.string().optional(),
  keyId: z.string().optional(),
  model: z.string().optional(),
  inputTokens: z.number().optional(),
  outputTokens: z.number().optional(),
  category: z.string().optional().describe('CreditGranted, CreditNoteIssued: the kind of credit (promotional, credit_note)'),
  priority: z.number().int().optional().describe('CreditGranted, CreditNoteIssued: its draw priority (lower first; deposits 50)'),
  expiresAt: z.string().nullable().optional().describe('CreditGranted, CreditNoteIssued: when what is left of it expires (null: never)'),
  requestId: z.string().optional().describe('CreditNoteIssued: the request it credits'),
  reason: z.string().optional().describe('CreditNoteIssued: why it was issued'),
  drawn: z
    .array(z.object({ grantId: z.string(), amountNanoUsd: z.string() }))
    .optional()
    .describe(
      'TokensDebited: the grants the debit was paid from, in draw order (a deposit or reload is the grant of its id). Entries projected before grants existed have none until the ledger is rebuilt.',
    ),
  /** amountNanoUsd and balanceNanoUsd in USD. */
  amount: usd,
  balance: usd,
});

export const ledgerPageBody = z.object({
  workspaceId: z.string(),
  entries: z.array(ledgerEntryView),
  total: z.number(),
  nextCursor: z.string().nullable(),
});

// ---- requests -----------------------------------------------------------------------------------

const usdString = (field: string) =>
  z
    .string({ error: `${field} must be a USD amount as a decimal string, such as "100" or "2.50"` })
    .refine(isUsd, `${field} must be a USD amount as a decimal string, such as "100" or "2.50" (at most 9 decimals)`);

const cents = (field: string) =>
  usdString(field).refine((v) => !isUsd(v) || isWholeCents(parseUsd(v)), `${field} must be a whole number of cents`);

export const paymentMethodBody = z.object({
  paymentMethodId: z
    .string({ error: 'paymentMethodId is required (a Stripe PaymentMethod id such as pm_card_visa)' })
    .regex(/^pm_[A-Za-z0-9_]{1,200}$/, 'paymentMethodId must be a Stripe PaymentMethod id (pm_…)'),
});

export const depositBody = z.object({ amount: cents('amount') });

export const autoReloadBody = z.object({
  enabled: z.boolean({ error: 'enabled must be true or false' }),
  threshold: usdString('threshold'),
  amount: cents('amount').refine((v) => !isUsd(v) || parseUsd(v) >= MIN_RELOAD, `amount must be at least ${formatUsd(MIN_RELOAD)} USD`),
  monthlyCap: z.union([cents('monthlyCap'), z.null()]).optional(),
});

export const ledgerQuery = z.object({
  limit: z.coerce.number().int().min(1).max(500).default(100),
  cursor: z
    .string()
    .regex(/^\d{1,12}$/, 'cursor must be a value returned as nextCursor')
    .optional(),
});

// ---- contracts ----------------------------------------------------------------------------------

const gatewayErrors = {
  400: problem('The payment provider refused the request'),
  409: problem('A conflicting request with the same idempotency key, or the state does not allow it'),
  503: problem('The payment provider is unavailable (Retry-After)'),
};

export const showBilling = route({
  method: 'get',
  path: '/v1/workspaces/:ws/billing',
  summary: 'Balance, card on file, deposits made and auto-reload',
  description:
    "The workspace's billing at a glance, in decimal USD strings: balance, what running calls hold (`reserved`), what is available, and what was deposited, reloaded and spent; the card on file and the auto-reload settings.",
  tags: ['Billing'],
  security: ['session'],
  params: wsParams,
  responses: { 200: { description: 'The workspace’s billing', schema: billingViewBody }, ...memberErrors },
});

export const attachPaymentMethod = route({
  method: 'post',
  path: '/v1/workspaces/:ws/billing/payment-method',
  summary: 'Attach a card (a Stripe PaymentMethod id) (admins)',
  description: "Attaches the card to the workspace's Stripe customer and makes it the card deposits and auto-reload charge.",
  tags: ['Billing'],
  security: ['session'],
  params: wsParams,
  body: paymentMethodBody,
  responses: {
    200: { description: 'The card on file', schema: paymentMethodAttached },
    ...memberWriteErrors,
    ...gatewayErrors,
    402: problem('The card was declined'),
    422: invalidInput('Not a PaymentMethod id, or the payment provider does not know it'),
  },
});

const KEY_REQUIRED =
  'An Idempotency-Key header (1 to 255 visible characters, e.g. a uuid) is required: a retry with the same key never charges twice';
const GRANT_KEY_REQUIRED =
  'An Idempotency-Key header (1 to 255 visible characters, e.g. a uuid) is required: a retry with the same key never grants twice';
const REPLAYED = { 'Idempotent-Replayed': '`true` when this is the answer of an earlier request with the same Idempotency-Key' };

export const makeDeposit = route({
  method: 'post',
  path: '/v1/workspaces/:ws/billing/deposits',
  summary: 'Charge the card on file and credit the balance (admins)',
  description:
    'Needs an Idempotency-Key header (1 to 255 visible characters, e.g. a uuid): a retry with the same key never charges twice ' +
    'and answers as the first did, with Idempotent-Replayed: true. A missing or bad key is 422 with loc ["header", "Idempotency-Key"].',
  tags: ['Billing'],
  security: ['session'],
  params: wsParams,
  headers: z.object({
    'Idempotency-Key': z
      .string({ error: KEY_REQUIRED })
      .min(1, KEY_REQUIRED)
      .max(255, KEY_REQUIRED)
      .regex(/^[\x21-\x7e]+$/, KEY_REQUIRED)
      .describe('1 to 255 visible characters (e.g. a uuid): a retry with the same key never charges twice'),
  }),
  body: depositBody,
  responses: {
    201: { description: 'Charged; the balance after it', schema: depositSucceeded, headers: REPLAYED },
    202: {
      description: 'The payment provider did not answer in time: settled later, or retry with the same key',
      schema: depositPending,
      headers: REPLAYED,
    },
    402: { description: 'The charge failed', schema: depositFailed, headers: REPLAYED },
    ...memberWriteErrors,
    ...gatewayErrors,
    409: problem('No card on file, or a conflicting request with the same idempotency key'),
    422: invalidInput(),
  },
});

export const listDeposits = route({
  method: 'get',
  path: '/v1/workspaces/:ws/billing/deposits',
  summary: 'The workspace’s deposits (requested, succeeded, failed), newest first',
  description: 'Each deposit with its amount and state, and the smallest deposit the next one may be.',
  tags: ['Billing'],
  security: ['session'],
  params: wsParams,
  responses: { 200: { description: 'Deposits and the smallest next deposit', schema: depositList }, ...memberErrors },
});

export const configureAutoReload = route({
  method: 'put',
  path: '/v1/workspaces/:ws/billing/auto-reload',
  summary: 'Set auto-reload: below `threshold`, charge `amount`, at most `monthlyCap` a month (admins)',
  description:
    'Auto-reload charges the card on file when the balance falls below `threshold`, never more than `monthlyCap` in a calendar month; `enabled: false` turns it off. Needs a card (POST …/billing/payment-method).',
  tags: ['Billing'],
  security: ['session'],
  params: wsParams,
  body: autoReloadBody,
  responses: {
    200: {
      description: 'The auto-reload settings (null only when the read model has not caught up in time)',
      schema: autoReloadView.nullable(),
    },
    ...memberWriteErrors,
    409: problem('No card on file'),
    422: invalidInput(),
  },
});

export const ledger = route({
  method: 'get',
  path: '/v1/workspaces/:ws/billing/ledger',
  summary: 'The ledger: deposits, reloads and debits with the running balance, oldest first',
  description:
    "One row per ledger event, with its event-store position, so any call's debit can be found; paged with `limit` and `cursor` (the `nextCursor` of the page before).",
  tags: ['Billing'],
  security: ['session'],
  params: wsParams,
  query: ledgerQuery,
  responses: { 200: { description: 'One page of the ledger', schema: ledgerPageBody }, ...memberErrors, 422: invalidInput() },
});

// ---- credit grants ------------------------------------------------------------------------------

export const creditGrantView = z
  .object({
    grantId: z.string(),
    category: z
      .enum(['paid', 'promotional', 'credit_note'])
      .describe(
        '`paid`: a deposit or reload (never expires); `promotional`: granted by an operator; `credit_note`: an operator credited part of a request (never expires)',
      ),
    source: z.enum(['deposit', 'reload', 'operator']),
    amount: usd.describe('What was granted'),
    remaining: usd.describe('What is left to draw on (0 once used up or expired)'),
    expired: usd.nullable().describe('What its expiry took out of the balance; null while it has not expired'),
    priority: z.number().int().describe('Draw order: lower first (deposits and reloads are 50), then the soonest expiry, then the oldest'),
    expiresAt: z.string().nullable(),
    grantedAt: z.string(),
    status: z.enum(['active', 'used', 'expired']),
    note: z.string().optional().describe("The operator's note; for a credit note, its reason"),
    requestId: z.string().optional().describe('A credit note: the request it credits'),
  })
  .meta({ id: 'CreditGrant' });

export const creditGrantBody = z.object({
  amount: cents('amount').refine((v) => !isUsd(v) || parseUsd(v) > 0n, 'amount must be more than 0'),
  expiresAt: z
    .union([z.iso.datetime({ offset: true, error: 'expiresAt must be an ISO-8601 time, such as 2027-01-31T00:00:00Z' }), z.null()])
    .optional()
    .describe('When what is left of it expires; absent or null: never'),
  priority: z
    .number({ error: 'priority must be a whole number from 1 to 100' })
    .int('priority must be a whole number from 1 to 100')
    .min(1, 'priority must be a whole number from 1 to 100')
    .max(100, 'priority must be a whole number from 1 to 100')
    .default(10)
    .describe('Lower is drawn first; deposits and reloads are 50. Default 10: before paid credit'),
  note: z.string().max(500, 'note must be at most 500 characters').default('').describe('Why it was granted (shown to the workspace)'),
});

export const grantCredit = route({
  method: 'post',
  path: '/admin/workspaces/:ws/credit-grants',
  summary: 'Grant a workspace promotional credit (operators)',
  description:
    'Adds credit of its own kind, drawn by priority, then soonest expiry, then oldest; what is left at `expiresAt` leaves the balance. ' +
    'Needs an Idempotency-Key header: the same key again answers the same grant (Idempotent-Replayed: true); with another body, 409.',
  tags: ['admin', 'Billing'],
  security: ['operatorToken'],
  params: wsParams,
  headers: z.object({
    'Idempotency-Key': z
      .string({ error: GRANT_KEY_REQUIRED })
      .min(1, GRANT_KEY_REQUIRED)
      .max(255, GRANT_KEY_REQUIRED)
      .regex(/^[\x21-\x7e]+$/, GRANT_KEY_REQUIRED),
  }),
  body: creditGrantBody,
  responses: {
    201: { description: 'Granted', schema: z.object({ grant: creditGrantView }), headers: REPLAYED },
    401: { description: 'The operator token is missing or wrong', headers: { 'WWW-Authenticate': '`Bearer`' } },
    403: problem("A signed-in user's session token: operators only"),
    404: problem('No such workspace (or ADMIN_TOKEN is unset)'),
    409: problem('The Idempotency-Key was used for another grant'),
    422: invalidInput(),
  },
});

export const listCreditGrants = route({
  method: 'get',
  path: '/v1/workspaces/:ws/billing/credit-grants',
  summary: 'The workspace’s credit grants with what each has left, newest first',
  description:
    'Every credit is a grant: deposits and reloads (paid, never expire) and promotional credit an operator granted. The balance is the sum of the `remaining` amounts.',
  tags: ['Billing'],
  security: ['session'],
  params: wsParams,
  responses: { 200: { description: 'The grants', schema: z.object({ grants: z.array(creditGrantView) }) }, ...memberErrors },
});

const NOTE_KEY_REQUIRED =
  'An Idempotency-Key header (1 to 255 visible characters, e.g. a uuid) is required: a retry with the same key never credits twice';

export const creditNoteBody = z.object({
  amount: usdString('amount')
    .refine((v) => !isUsd(v) || parseUsd(v) > 0n, 'amount must be more than 0')
    .describe(
      "USD, at most 9 decimals (nano-USD, a request's cost is exact to it); at most the request's cost less its earlier credit notes",
    ),
  reason: z
    .string({ error: 'reason is required: why the request is credited (shown on its receipt)' })
    .trim()
    .min(1, 'reason is required: why the request is credited (shown on its receipt)')
    .max(500, 'reason must be at most 500 characters'),
});

export const creditNoteView = z
  .object({
    creditNoteId: z.string().describe('Also its grant id in the credit-grants list (category `credit_note`)'),
    requestId: z.string(),
    amount: usd,
    reason: z.string(),
    issuedAt: z.string(),
    requestCost: usd.describe("The request's cost"),
    credited: usd.describe('All credit notes of the request so far, this one included'),
  })
  .meta({ id: 'CreditNote' });

export const issueCreditNote = route({
  method: 'post',
  path: '/admin/workspaces/:ws/requests/:requestId/credit-notes',
  summary: "Credit part or all of a request's cost (operators)",
  description:
    "Adds a `credit_note` grant (never expires, drawn at priority 40, before paid credit) of at most the request's cost less its earlier credit notes; " +
    "the request's receipt lists it. Needs an Idempotency-Key header: the same key again answers the same note (Idempotent-Replayed: true); with another body, 409.",
  tags: ['admin', 'Billing'],
  security: ['operatorToken'],
  params: z.object({ ws: z.string(), requestId: z.string() }),
  headers: z.object({
    'Idempotency-Key': z
      .string({ error: NOTE_KEY_REQUIRED })
      .min(1, NOTE_KEY_REQUIRED)
      .max(255, NOTE_KEY_REQUIRED)
      .regex(/^[\x21-\x7e]+$/, NOTE_KEY_REQUIRED),
  }),
  body: creditNoteBody,
  responses: {
    201: { description: 'Issued', schema: z.object({ creditNote: creditNoteView }), headers: REPLAYED },
    401: { description: 'The operator token is missing or wrong', headers: { 'WWW-Authenticate': '`Bearer`' } },
    403: problem("A signed-in user's session token: operators only"),
    404: problem('No such workspace, or no such request in it (or ADMIN_TOKEN is unset)'),
    409: problem('The Idempotency-Key was used for another credit note, or the request is not billed yet'),
    422: invalidInput(),
  },
});

export const routes: RouteContract[] = [
  showBilling,
  grantCredit,
  issueCreditNote,
  listCreditGrants,
  attachPaymentMethod,
  makeDeposit,
  listDeposits,
  configureAutoReload,
  ledger,
  ...usageContracts,
  ...statementContracts,
];
