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

export const usageQuery = z.object({
  granularity: granularity.default('hour'),
  from: time.optional().describe('ISO-8601 or Unix seconds, inclusive (rounded down to its bucket)'),
  to: time.optional().describe('ISO-8601 or Unix seconds, exclusive'),
  groupBy: z.enum(['key', 'model']).optional(),
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
  total: totals,
  points: z.array(usagePoint),
});

export const usageBody = z.object({
  workspaceId: z.string(),
  granularity,
  from: z.string(),
  to: z.string(),
  groupBy: z.enum(['key', 'model']).nullable(),
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
  summary: 'Requests, tokens and cost per minute, hour or day; in total, per key or per model',
  description: 'Without from/to: the last 60 minutes, 24 hours or 30 days, up to and including the current bucket.',
  tags: ['Usage'],
  security: ['session'],
  params: wsParams,
  query: usageQuery,
  responses: { 200: { description: 'The series', schema: usageBody }, ...memberErrors, 422: invalidInput('A bad value, from not before to, or too many points') },
});

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
    200: { description: 'The stream', contentType: 'text/event-stream', eventSchema: usageLiveEvent },
    ...memberErrors,
    429: problem('Too many live streams open at once (Retry-After)'),
  },
});

export const usageContracts: RouteContract[] = [usageSeries, usageLive];
