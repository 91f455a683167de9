import { z } from 'zod';
import { route, RouteContract } from '../contract';
import { transportErrors } from '../error-bodies';

/** Health and readiness on the API port, and the Prometheus listener on METRICS_PORT. */

export const healthz = route({
  method: 'get',
  path: '/healthz',
  summary: 'Liveness: the process is up',
  description: 'Answers 200 while the process serves HTTP; it checks nothing else (see /readyz).',
  tags: ['system'],
  security: [],
  responses: { 200: { description: 'Up', schema: z.object({ status: z.literal('ok') }) }, ...transportErrors },
});

const readiness = z
  .object({
    status: z.enum(['ready', 'not ready']),
    checks: z
      .object({ eventStore: z.string(), redis: z.string(), projections: z.string() })
      .describe('"ok", or what is wrong with that part'),
  })
  .meta({ id: 'Readiness' });

export const readyz = route({
  method: 'get',
  path: '/readyz',
  summary: 'Readiness: the event store takes writes, Redis answers and the read models are caught up',
  description: '503 with the failing check named while any of them is not ready; a load balancer sends traffic only on 200.',
  tags: ['system'],
  security: [],
  responses: {
    200: { description: 'Ready', schema: readiness },
    503: { description: 'Not ready: every failing check says why', schema: readiness },
    ...transportErrors,
  },
});

export const routes: RouteContract[] = [healthz, readyz];

/**
 * GET /metrics is served by its own listener (METRICS_PORT on HOST, only when METRICS_PORT is
 * set), apart from the API port so that it can stay inside the operators' network. The document
 * lists it with a path-level server of its own; /admin/metrics serves the same text on the API port.
 */
export const scrape = route({
  method: 'get',
  path: '/metrics',
  summary: 'Prometheus metrics (METRICS_PORT listener)',
  description: 'Served on METRICS_PORT, not on the API port; any other path or method there answers 404.',
  tags: ['system'],
  security: [],
  responses: {
    200: {
      description: 'The Prometheus text exposition format',
      contentType: 'text/plain; version=0.0.4; charset=utf-8',
      schema: z.string(),
    },
    404: {
      description:
        'Anything but GET /metrics there; on the API port /metrics is not served (404, with the x-request-id every API answer carries)',
      headers: { 'x-request-id': 'On the API port only: the id of the request' },
    },
  },
});

export const metricsPortRoutes: RouteContract[] = [scrape];
