import { z } from 'zod';
import { memberErrors, wsParams } from '../../accounts/routes';
import { route, type RouteContract } from '../../platform/http/contract';
import { invalidInput, problem } from '../../platform/http/error-bodies';

/** The usage routes' contracts: the series, and the live stream of debits. */

const time = z
  .string()
  .refine((v) => /^\d{1,12}$/.test(v) || !Number.isNaN(Date.parse(v)), 'must be an ISO-8601 time or Unix seconds')
  .transform((v) => (/^\d{1,12}$/.test(v) ? Number(v) : Math.floor(Date.parse(v) / 1000)));

export const granularity = z.enum(['minute', 'hour', 'day']);

export const USAGE_GROUPINGS = ['key', 'member', 'config', 'endpoint', 'model'] as const;
export const usageGrouping = z.enum(USAGE_GROUPINGS, {
  error: () => `groupBy must be one of ${USAGE_GROUPINGS.join(', ')} (member: who created the key; model is the older name of config)`,
});
export const USAGE_FORMATS = ['json', 'csv', 'focus'] as const;

/** The CSV export's columns, one row per series and bucket with any usage. */
export const USAGE_CSV_COLUMNS = [
  'bucket_start',
  'bucket_end',
  'group_by',
  'group',
  'group_name',
  'requests',
  'input_tokens',
  'output_tokens',
  'cost_usd',
] as const;

/** The FOCUS-style cost export's columns (FOCUS 1.x names; x_ columns are tollgate's own), one row per key and bucket with any usage. */
export const FOCUS_COLUMNS = [
  'BillingAccountId',
  'BillingPeriodStart',
  'BillingPeriodEnd',
  'ChargePeriodStart',
  'ChargePeriodEnd',
  'ChargeCategory',
  'ChargeDescription',
  'ProviderName',
  'PublisherName',
  'ServiceName',
  'ServiceCategory',
  'ResourceId',
  'ResourceName',
  'BilledCost',
  'EffectiveCost',
  'BillingCurrency',
  'ConsumedQuantity',
  'ConsumedUnit',
  'x_Requests',
  'x_InputTokens',
  'x_OutputTokens',
] as const;

export const usageQuery = z.object({
  granularity: granularity.default('hour'),
  from: time.optional().describe('ISO-8601 or Unix seconds, inclusive (rounded down to its bucket)'),
  to: time.optional().describe('ISO-8601 or Unix seconds, exclusive'),
  groupBy: usageGrouping.optional(),
  format: z
    .enum(USAGE_FORMATS, { error: () => `format must be one of ${USAGE_FORMATS.join(', ')}` })
    .optional()
    .describe('json (default), csv, or focus: a FOCUS-style cost CSV, one row per key and bucket'),
});

const usd = z.string().describe('USD, a decimal string');
const totals = z.object({ requests: z.number(), inputTokens: z.number(), outputTokens: z.number(), cost: usd });

export const usagePoint = totals.extend({ t: z.string().describe('Bucket start, ISO-8601 UTC') });

export const usageSeriesView = z.object({
  /** groupBy=key: the key, its name (kept after deletion) and whether it was deleted. */
  keyId: z.string().optional(),
  keyName: z.string().nullable().optional(),
  keyDeleted: z.boolean().optional(),
  /** groupBy=model. */
  model: z.string().optional(),
  /** groupBy=config: the model configuration the requests named. */
  config: z.string().optional(),
  /** groupBy=member: who created the keys ("unknown" for debits older than this grouping), and their name and e-mail when known. */
  memberId: z.string().optional(),
  memberName: z.string().nullable().optional(),
  memberEmail: z.string().nullable().optional(),
  /** groupBy=endpoint: inference, streaming or openai ("unknown" for debits older than this grouping). */
  endpoint: z.string().optional(),
  total: totals,
  points: z.array(usagePoint),
});

export const usageBody = z.object({
  workspaceId: z.string(),
  granularity,
  from: z.string(),
  to: z.string(),
  groupBy: z.enum(USAGE_GROUPINGS).nullable(),
  series: z.array(usageSeriesView),
});

/** The `data:` of each `event: usage` on the live stream: one debited request. */
export const usageLiveEvent = z.object({
  requestId: z.string(),
  workspaceId: z.string(),
  keyId: z.string(),
  model: z.string(),
  inputTokens: z.number(),
  outputTokens: z.number(),
  cost: usd,
  costNanoUsd: z.string(),
  at: z.string(),
});

export const usageSeries = route({
  method: 'get',
  path: '/v1/workspaces/:ws/usage',
  summary:
    'Requests, tokens and cost per minute, hour or day; in total, or per key, member, config or endpoint; as JSON, CSV or a FOCUS cost CSV',
  description:
    'Without from/to: the last 60 minutes, 24 hours or 30 days, up to and including the current bucket. ' +
    `format=csv: columns ${USAGE_CSV_COLUMNS.join(', ')}. format=focus (resource = API key; groupBy must be absent or key): ` +
    `columns ${FOCUS_COLUMNS.join(', ')}; BillingPeriod is the bucket's UTC calendar month, ChargePeriod the bucket, ConsumedQuantity the tokens (input + output).`,
  tags: ['Usage'],
  security: ['session'],
  params: wsParams,
  query: usageQuery,
  responses: {
    200: {
      description: 'The series, or a CSV export',
      schema: usageBody,
      also: [{ contentType: 'text/csv', schema: z.string().describe('CSV with a header row (format=csv or format=focus)') }],
      headers: { 'Content-Disposition': 'For CSV: attachment; filename="tollgate-usage-<ws>.csv" or "tollgate-focus-<ws>.csv"' },
    },
    ...memberErrors,
    422: invalidInput('A bad value, an unknown groupBy or format, from not before to, or too many points'),
  },
});

/** The last frame when the server ends the stream (access ended, or a reader too far behind), as `event: closed`. */
export const usageLiveClosed = z
  .object({ detail: z.string() })
  .meta({ id: 'UsageLiveClosed', description: 'Sent as `event: closed` when the server ends the stream, then it ends' });

export const usageLive = route({
  method: 'get',
  path: '/v1/workspaces/:ws/usage/live',
  summary: 'Server-sent events: `event: usage`, one per debited request',
  description:
    'Comments `: ping` every 15 s. When the session ends or the caller leaves the workspace, `event: closed` with `{"detail": …}` and the stream ends.',
  tags: ['Usage'],
  security: ['session'],
  params: wsParams,
  responses: {
    200: {
      description: 'The stream: `event: usage` frames, and `event: closed` last when it ends on the server’s side',
      contentType: 'text/event-stream',
      eventSchema: z.union([usageLiveEvent, usageLiveClosed]),
    },
    ...memberErrors,
    429: problem('Too many live streams open at once (Retry-After)'),
  },
});

export const usageContracts: RouteContract[] = [usageSeries, usageLive];
