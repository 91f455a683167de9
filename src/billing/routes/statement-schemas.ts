import { z } from 'zod';
import { memberErrors, wsParams } from '../../accounts/routes';
import { route, type RouteContract } from '../../platform/http/contract';
import { invalidInput, problem } from '../../platform/http/error-bodies';

/** Monthly statements and deposit receipts (docs/BILLING.md, "Statements and receipts"). */

const usd = z.string().describe('USD, a decimal string');

export const STATEMENT_CSV_COLUMNS = [
  'section',
  'time',
  'reference',
  'payment_reference',
  'key_id',
  'config',
  'requests',
  'input_tokens',
  'output_tokens',
  'amount_usd',
] as const;

export const statementBody = z.object({
  workspaceId: z.string(),
  workspaceName: z.string(),
  month: z.string().describe('YYYY-MM, a UTC calendar month'),
  periodStart: z.string(),
  periodEnd: z.string().describe('Exclusive'),
  complete: z.boolean().describe('false for the current month: lines may still be added'),
  openingBalance: usd,
  credits: z.array(
    z.object({
      at: z.string(),
      kind: z.enum(['deposit', 'reload', 'grant']).describe('`grant`: promotional credit an operator granted'),
      reference: z.string().describe('depositId, reloadId or grantId'),
      paymentReference: z.string().nullable().describe('The payment provider’s reference (Stripe PaymentIntent id)'),
      amount: usd,
    }),
  ),
  expiries: z
    .array(z.object({ at: z.string(), reference: z.string().describe('The grantId'), amount: usd.describe('What the expiry took out') }))
    .describe('Grants whose expiry was recorded in the month'),
  usage: z.array(
    z.object({
      keyId: z.string(),
      keyName: z.string().nullable(),
      config: z.string(),
      requests: z.number(),
      inputTokens: z.number(),
      outputTokens: z.number(),
      cost: usd,
    }),
  ),
  totals: z.object({
    deposits: usd,
    reloads: usd,
    grants: usd,
    credits: usd.describe('deposits + reloads + grants'),
    expiries: usd,
    debits: usd.describe('usage + expiries'),
  }),
  closingBalance: usd.describe('openingBalance + totals.credits − totals.debits'),
  receipts: z
    .object({
      algorithm: z.literal('sha256'),
      count: z.number().int().describe('Inference receipts (TokensDebited events) of the month'),
      value: z.string().describe('hex'),
    })
    .describe(
      'A digest over the month’s inference receipts: SHA-256 of one line per receipt in ledger order, `debit.position requestId key.keyId inputTokens outputTokens cost` separated by tabs, each ended by a newline (docs/INFERENCE.md, "Receipts in the monthly statement")',
    ),
});

export const statementMonthsBody = z.object({
  workspaceId: z.string(),
  months: z.array(z.object({ month: z.string(), periodStart: z.string(), periodEnd: z.string(), complete: z.boolean() })),
});

export const receiptBody = z.object({
  workspaceId: z.string(),
  workspaceName: z.string(),
  receiptNumber: z.string().describe('The deposit id'),
  amount: usd,
  currency: z.literal('USD'),
  paidAt: z.string(),
  paymentReference: z.string(),
  gateway: z.string(),
  card: z.object({ brand: z.string(), last4: z.string() }).nullable(),
  paidBy: z.object({ userId: z.string(), name: z.string().nullable(), email: z.string().nullable() }),
});

const monthParams = wsParams.extend({ month: z.string().describe('YYYY-MM (UTC)') });
const formatQuery = (formats: readonly [string, ...string[]]) =>
  z.object({ format: z.enum(formats, { error: () => `format must be one of ${formats.join(', ')}` }).optional() });

export const listStatements = route({
  method: 'get',
  path: '/v1/workspaces/:ws/statements',
  summary: 'The months the workspace has statements for, newest first',
  description: 'Each month with activity; GET …/statements/{month} answers the statement itself.',
  tags: ['Billing'],
  security: ['session'],
  params: wsParams,
  responses: {
    200: { description: 'From the month the workspace was created to the current one', schema: statementMonthsBody },
    ...memberErrors,
  },
});

export const showStatement = route({
  method: 'get',
  path: '/v1/workspaces/:ws/statements/:month',
  summary: 'A monthly statement: opening balance, deposits and reloads, usage per key and config, closing balance',
  description:
    'openingBalance + totals.credits − totals.debits = closingBalance, and a month’s closing balance is the next month’s opening. ' +
    `format=json (default), csv (columns ${STATEMENT_CSV_COLUMNS.join(', ')}) or pdf.`,
  tags: ['Billing'],
  security: ['session'],
  params: monthParams,
  query: formatQuery(['json', 'csv', 'pdf']),
  responses: {
    200: {
      description: 'The statement',
      schema: statementBody,
      also: [
        { contentType: 'text/csv', schema: z.string().describe('CSV with a header row') },
        { contentType: 'application/pdf', schema: z.string().describe('A PDF document') },
      ],
      headers: { 'Content-Disposition': 'For CSV and PDF: attachment; filename="tollgate-statement-<ws>-<month>.csv|pdf"' },
    },
    ...memberErrors,
    422: invalidInput('Not a month, a month in the future, or one before the workspace existed (loc path.month); or an unknown format'),
  },
});

export const showReceipt = route({
  method: 'get',
  path: '/v1/workspaces/:ws/billing/deposits/:depositId/receipt',
  summary: 'The receipt of a succeeded deposit, as JSON or PDF',
  description: '`?format=pdf` answers the PDF, else the JSON. 404 for a deposit that did not succeed.',
  tags: ['Billing'],
  security: ['session'],
  params: wsParams.extend({ depositId: z.string() }),
  query: formatQuery(['json', 'pdf']),
  responses: {
    200: {
      description: 'The receipt',
      schema: receiptBody,
      also: [{ contentType: 'application/pdf', schema: z.string().describe('A PDF document') }],
      headers: { 'Content-Disposition': 'For PDF: attachment; filename="tollgate-receipt-<depositId>.pdf"' },
    },
    ...memberErrors,
    404: problem('Workspace not found, the caller is not a member, or no succeeded deposit with this id'),
    422: invalidInput('An unknown format'),
  },
});

export const statementContracts: RouteContract[] = [listStatements, showStatement, showReceipt];
