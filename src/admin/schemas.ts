import { z } from 'zod';
import { route, RouteContract } from '../platform/http/contract';

/**
 * The operator routes' contracts. /admin exists only when ADMIN_TOKEN is set (404 otherwise) and
 * every route needs `Authorization: Bearer <ADMIN_TOKEN>`.
 */

const position = z.string().regex(/^\d+$/).describe('An event-store position (decimal string)');

export const rebuildProgress = z
  .object({
    name: z.string(),
    generation: z.string().describe('The generation it fills; also its fencing token'),
    owner: z.string(),
    startedAt: z.string(),
    position,
    head: position,
    events: z.number().int(),
  })
  .meta({ id: 'RebuildProgress' });

export const projectionRow = z
  .object({
    name: z.string(),
    gen: z.string().describe('The generation readers use'),
    checkpoint: position,
    head: position,
    lag: position.describe('head − checkpoint, in store positions'),
    rebuilding: rebuildProgress.nullable(),
  })
  .meta({ id: 'ProjectionStatus' });

const OPERATOR = {
  401: { description: 'The operator token is missing or wrong', headers: { 'WWW-Authenticate': '`Bearer`' } },
  403: { description: "A signed-in user's session token: operators only", schema: z.object({ detail: z.string() }) },
  404: { description: 'ADMIN_TOKEN is unset: /admin does not exist' },
};

export const listProjections = route({
  method: 'get',
  path: '/admin/projections',
  summary: 'Every projection: generation, checkpoint, head, lag and any running rebuild',
  description: 'For operators: how far each read model is behind the event store, and the progress of a rebuild that runs.',
  tags: ['admin'],
  security: ['operatorToken'],
  responses: { 200: { description: 'The projections', schema: z.object({ projections: z.array(projectionRow) }) }, ...OPERATOR },
});

export const rebuild = route({
  method: 'post',
  path: '/admin/projections/:name/rebuild',
  summary: 'Rebuild one projection into a new generation, then switch readers to it',
  description:
    'Builds the read model anew from the first event beside the live one, then switches readers over; the live one keeps serving meanwhile. One rebuild per projection at a time (409).',
  tags: ['admin'],
  security: ['operatorToken'],
  params: z.object({ name: z.string() }),
  responses: {
    200: {
      description: 'Rebuilt and switched',
      schema: z.object({ name: z.string(), generation: z.string(), events: z.number().int(), ms: z.number() }),
    },
    ...OPERATOR,
    404: { description: 'No such projection (or ADMIN_TOKEN is unset)' },
    409: {
      description: 'A rebuild of it is already running (its progress is in `rebuilding`), or this one lost its lock',
      schema: z.object({ detail: z.string(), rebuilding: rebuildProgress.optional() }),
    },
  },
});

export const adminMetrics = route({
  method: 'get',
  path: '/admin/metrics',
  summary: 'Prometheus metrics through the API port',
  description: 'The same text as GET /metrics on METRICS_PORT, for setups that scrape through the API port.',
  tags: ['admin', 'system'],
  security: ['operatorToken'],
  responses: {
    200: {
      description: 'The Prometheus text exposition format',
      contentType: 'text/plain; version=0.0.4; charset=utf-8',
      schema: z.string(),
    },
    ...OPERATOR,
  },
});

export const rateLimitBody = z.object({
  requestsPerMinute: z
    .union([z.number().int().min(1).max(1_000_000), z.null()])
    .describe('null restores the default (RATE_LIMIT_PER_MINUTE)'),
});

export const setRateLimit = route({
  method: 'put',
  path: '/admin/workspaces/:ws/keys/:keyId/rate-limit',
  summary: "Override one key's requests per minute",
  description: 'Replaces RATE_LIMIT_PER_MINUTE for this key, in every process at once.',
  tags: ['admin'],
  security: ['operatorToken'],
  params: z.object({ ws: z.string(), keyId: z.string() }),
  body: rateLimitBody,
  responses: {
    200: {
      description: 'The limit in force',
      schema: z.object({ keyId: z.string(), requestsPerMinute: z.number().int(), overridden: z.boolean() }),
    },
    ...OPERATOR,
    404: { description: 'No such workspace or key' },
    422: { description: 'requestsPerMinute is not an integer from 1 to 1000000, nor null' },
  },
});

export const eraseUser = route({
  method: 'post',
  path: '/admin/users/:id/erase',
  summary: 'Erase a user: destroy their data key, so their personal fields read as erased (docs/SECURITY.md)',
  description:
    'The operator’s form of DELETE /v1/me, with no password: the e-mail claim is released, the data key destroyed, UserErased appended and ' +
    'every session ended. Ledgers and statements stay whole; the personal fields of every event read as `[erased]`.',
  tags: ['admin'],
  security: ['operatorToken'],
  params: z.object({ id: z.string() }),
  responses: {
    204: { description: 'Erased' },
    ...OPERATOR,
    404: { description: 'No such user (or already erased)' },
    409: { description: 'The user is the last admin of a workspace with other members (the answer names them)' },
  },
});

export const routes: RouteContract[] = [listProjections, rebuild, adminMetrics, setRateLimit, eraseUser];
