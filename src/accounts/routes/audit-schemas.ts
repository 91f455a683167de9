import { z } from 'zod';
import { isAuditCursor } from '../projections/audit/queries';
import { route, type RouteContract } from '../../platform/http/contract';
import { invalidInput, problem } from '../../platform/http/error-bodies';
import { memberErrors, wsParams } from './fields';

/** GET /v1/workspaces/:ws/audit's contract: JSON pages, or the whole log as CSV. */

export const AUDIT_DEFAULT_LIMIT = 50;
export const AUDIT_MAX_LIMIT = 200;

export const CSV_COLUMNS = [
  'time',
  'actor_type',
  'actor_id',
  'actor_name',
  'actor_email',
  'action',
  'target_type',
  'target_id',
  'target_name',
  'outcome',
  'details',
];

export const auditQuery = z.object({
  cursor: z.string().refine(isAuditCursor, 'cursor must be a nextCursor from an earlier page').optional(),
  limit: z.coerce
    .number({ error: `limit must be a whole number from 1 to ${AUDIT_MAX_LIMIT}` })
    .int(`limit must be a whole number from 1 to ${AUDIT_MAX_LIMIT}`)
    .min(1, `limit must be a whole number from 1 to ${AUDIT_MAX_LIMIT}`)
    .max(AUDIT_MAX_LIMIT, `limit must be a whole number from 1 to ${AUDIT_MAX_LIMIT}`)
    .default(AUDIT_DEFAULT_LIMIT),
  format: z.enum(['json', 'csv'], { error: 'format must be "json" or "csv"' }).optional(),
  from: z.iso.datetime({ offset: true, error: 'from must be an ISO-8601 time, e.g. 2026-11-01T00:00:00Z' }).optional(),
  to: z.iso.datetime({ offset: true, error: 'to must be an ISO-8601 time, e.g. 2026-12-01T00:00:00Z' }).optional(),
});

export const auditActor = z.discriminatedUnion('type', [
  z.object({ type: z.literal('user'), userId: z.string(), name: z.string().nullable(), email: z.string().nullable() }),
  z.object({ type: z.literal('apiKey'), keyId: z.string(), name: z.string().nullable(), last4: z.string().nullable() }),
  z.object({ type: z.literal('operator') }),
  z.object({ type: z.literal('system'), name: z.string() }),
]);

export const auditTarget = z.object({
  type: z.enum(['workspace', 'member', 'invitation', 'apiKey', 'paymentMethod', 'deposit', 'autoReload', 'webhookEndpoint', 'creditGrant']),
  id: z.string(),
  name: z.string().optional(),
  email: z.string().optional(),
  last4: z.string().optional(),
  brand: z.string().optional(),
});

export const auditEntry = z.object({
  id: z.string(),
  time: z.string(),
  actor: auditActor,
  action: z.string(),
  target: auditTarget.nullable(),
  outcome: z.enum(['succeeded', 'failed']),
  details: z.record(z.string(), z.unknown()),
});

export const auditPageBody = z.object({
  entries: z.array(auditEntry),
  /** Pass back as `cursor` for the next, older page; null on the last page. */
  nextCursor: z.string().nullable(),
});

export const auditLog = route({
  method: 'get',
  path: '/v1/workspaces/:ws/audit',
  summary: 'The workspace’s audit log (admins), newest first',
  description:
    'JSON pages by default. With ?format=csv, or Accept: text/csv and no format, the whole window as CSV ' +
    `(text/csv; columns ${CSV_COLUMNS.join(', ')}) as an attachment.`,
  tags: ['Audit'],
  security: ['session'],
  params: wsParams,
  query: auditQuery,
  responses: {
    200: {
      description: 'One page of entries, or the CSV export',
      schema: auditPageBody,
      also: [{ contentType: 'text/csv', schema: z.string().describe(`CSV with a header row: ${CSV_COLUMNS.join(',')}`) }],
      headers: { 'Content-Disposition': 'For CSV: attachment; filename="tollgate-audit-<ws>.csv"' },
    },
    ...memberErrors,
    403: problem('Admins only'),
    422: invalidInput(),
  },
});

export const auditContracts: RouteContract[] = [auditLog];
