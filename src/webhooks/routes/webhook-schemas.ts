import { z } from 'zod';
import { memberErrors, memberWriteErrors, wsParams } from '../../accounts/routes';
import { route, type RouteContract } from '../../platform/http/contract';
import { invalidInput, problem } from '../../platform/http/error-bodies';
import { webhookEventTypes } from '../event-types';

/** Outgoing webhooks, Standard Webhooks format (docs/WEBHOOKS.md). Admins only. */

const endpointParams = wsParams.extend({ endpointId: z.string() });
const deliveryParams = endpointParams.extend({ deliveryId: z.string().describe('The event id (webhook-id)') });

export const endpointBody = z.object({
  endpointId: z.string(),
  url: z.string(),
  eventTypes: z.array(z.string()),
  status: z.enum(['enabled', 'disabled']),
  disabledReason: z.string().nullable(),
  created: z.string(),
});

export const endpointWithSecretBody = endpointBody.extend({
  secret: z.string().describe('whsec_…, shown only in this answer: verify deliveries with it'),
});

export const deliveryBody = z.object({
  deliveryId: z.string().describe('The event id, sent as webhook-id on every attempt'),
  eventType: z.string(),
  status: z.enum(['pending', 'succeeded', 'failed', 'skipped']),
  attempts: z.array(
    z.object({
      at: z.string(),
      status: z.number().nullable().describe('The receiver’s HTTP status, null if none'),
      error: z.string().nullable(),
    }),
  ),
  created: z.string(),
  payload: z.string().describe('The exact JSON body sent'),
  position: z.string().optional().describe('The event’s log position: a replay can start there (sincePosition)'),
});

export const replayBody = z.object({
  replayId: z.string().describe('whr_…, derived from the endpoint and the starting point: asking again answers the same replay'),
  since: z.string().nullable().describe('The ISO time the replay starts at, or null when it starts at sincePosition'),
  fromPosition: z.string().describe('Inclusive; "0" for a replay since a time (the log is scanned from its start)'),
  toPosition: z.string().describe('The head of the log when the replay was asked for; later events are delivered live'),
  status: z.enum(['scanning', 'enqueued']).describe('enqueued: every matching event is queued (see succeeded and failed for the outcome)'),
  matched: z.number().int().describe('Events queued for this replay so far'),
  succeeded: z.number().int().describe('Of them, delivered (a 2xx answer)'),
  failed: z.number().int().describe('Of them, every attempt failed (or the endpoint was disabled or deleted)'),
  created: z.string(),
});

const replayRequest = z
  .object({
    since: z.string({ error: 'since must be an ISO 8601 time' }).optional(),
    sincePosition: z.string({ error: 'sincePosition must be a decimal string' }).optional(),
  })
  .describe('Exactly one of since and sincePosition');

const thresholdRequest = z.object({
  threshold: z
    .string({ error: 'threshold must be a USD amount as a decimal string, such as "25" or "12.50", or null' })
    .nullable()
    .describe('USD, more than 0; null turns the alert off'),
});
export const thresholdBody = z.object({ threshold: z.string().nullable().describe('USD decimal string, or null: no alert') });

const registerBody = z.object({
  url: z.string({ error: 'url must be a string' }).max(2048, 'url must be at most 2048 characters long'),
  eventTypes: z
    .array(z.string(), { error: 'eventTypes must be a list of event types' })
    .min(1, 'eventTypes must name at least one event type'),
});

const tags = ['Webhooks'];
const adminWrite = { ...memberWriteErrors, 403: problem('Only admins manage webhooks (or a cookie write without X-Requested-With)') };
const admin = { ...memberErrors, 403: problem('Only admins manage webhooks') };

export const registerEndpoint = route({
  method: 'post',
  path: '/v1/workspaces/:ws/webhooks',
  summary: 'Register a webhook endpoint; the answer shows its signing secret once',
  description: `Event types: ${webhookEventTypes.join(', ')}. The URL must be http(s) and resolve to a public address unless the operator set WEBHOOKS_ALLOW_PRIVATE_TARGETS.`,
  tags,
  security: ['session'],
  params: wsParams,
  body: registerBody,
  responses: {
    201: { description: 'Registered', schema: endpointWithSecretBody },
    ...adminWrite,
    409: problem('The workspace has the most endpoints allowed'),
    422: invalidInput(
      'A URL that is not http(s), or whose host is (or resolves to) an address in a special-purpose range: private, loopback, link-local, documentation, … (loc body.url); an unknown event type (body.eventTypes)',
    ),
  },
});

export const listEndpoints = route({
  method: 'get',
  path: '/v1/workspaces/:ws/webhooks',
  summary: 'The workspace’s webhook endpoints (without secrets)',
  description:
    'Each endpoint with its URL, event types and whether it is enabled. A secret is shown only when it is made (registration, rotation). Admins only.',
  tags,
  security: ['session'],
  params: wsParams,
  responses: {
    200: {
      description: 'The endpoints',
      schema: z.object({
        endpoints: z.array(endpointBody),
        eventTypes: z.array(z.string()),
        balanceThreshold: z.string().nullable().describe('The low-balance alert threshold (USD), or null'),
      }),
    },
    ...admin,
  },
});

export const deleteEndpoint = route({
  method: 'delete',
  path: '/v1/workspaces/:ws/webhooks/:endpointId',
  summary: 'Delete a webhook endpoint: nothing more is sent to it',
  description: "Its deliveries stop with this answer; the events stay in the workspace's log. Admins only.",
  tags,
  security: ['session'],
  params: endpointParams,
  responses: { 204: { description: 'Deleted' }, ...adminWrite, 404: problem('Workspace or endpoint not found') },
});

export const rotateSecret = route({
  method: 'post',
  path: '/v1/workspaces/:ws/webhooks/:endpointId/rotate-secret',
  summary: 'A new signing secret, used from the next attempt on; shown once',
  description: 'Attempts already signed keep their signature; every attempt after this answer is signed with the new secret. Admins only.',
  tags,
  security: ['session'],
  params: endpointParams,
  responses: {
    200: { description: 'Rotated', schema: endpointWithSecretBody },
    ...adminWrite,
    404: problem('Workspace or endpoint not found'),
  },
});

export const listDeliveries = route({
  method: 'get',
  path: '/v1/workspaces/:ws/webhooks/:endpointId/deliveries',
  summary: 'The endpoint’s latest deliveries (newest first, at most 100) with every attempt',
  description: 'Each delivery with every attempt made, to see why a receiver missed one. Admins only.',
  tags,
  security: ['session'],
  params: endpointParams,
  responses: {
    200: { description: 'The deliveries', schema: z.object({ deliveries: z.array(deliveryBody) }) },
    ...admin,
    404: problem('Workspace or endpoint not found'),
  },
});

export const resendDelivery = route({
  method: 'post',
  path: '/v1/workspaces/:ws/webhooks/:endpointId/deliveries/:deliveryId/resend',
  summary: 'Send one delivery again (same webhook-id and body, signed anew)',
  description:
    'Queues one more attempt of a recorded delivery, with the same webhook-id, so a receiver that drops duplicates by it sees one event. Admins only.',
  tags,
  security: ['session'],
  params: deliveryParams,
  responses: {
    202: { description: 'Queued', schema: deliveryBody },
    ...adminWrite,
    404: problem('Workspace, endpoint or delivery not found'),
    409: problem('The endpoint is disabled'),
  },
});

export const enableEndpoint = route({
  method: 'post',
  path: '/v1/workspaces/:ws/webhooks/:endpointId/enable',
  summary: 'Enable a disabled endpoint: events stored from now on are sent to it (replay what it missed)',
  description: 'Enabling does not send what the endpoint missed while disabled: ask a replay for that. Admins only.',
  tags,
  security: ['session'],
  params: endpointParams,
  responses: {
    200: { description: 'Enabled (also when it already was)', schema: endpointBody },
    ...adminWrite,
    404: problem('Workspace or endpoint not found'),
  },
});

export const setBalanceThreshold = route({
  method: 'put',
  path: '/v1/workspaces/:ws/webhooks/balance-threshold',
  summary: 'Set the workspace’s low-balance alert threshold (balance.below_threshold), or null for none',
  description:
    'One alert each time the balance goes from at or above the threshold to below it; a deposit back to it or above re-arms the alert.',
  tags,
  security: ['session'],
  params: wsParams,
  body: thresholdRequest,
  responses: {
    200: { description: 'Set', schema: thresholdBody },
    ...adminWrite,
    422: invalidInput('threshold is not a positive USD decimal string or null (loc body.threshold)'),
  },
});

export const startReplay = route({
  method: 'post',
  path: '/v1/workspaces/:ws/webhooks/:endpointId/replays',
  summary: 'Send again every event of the endpoint’s types stored since a time (or from a log position)',
  description:
    'Each delivery keeps webhook-id = the event id. The replay id is derived from the endpoint and the starting point, so asking again answers the same replay (200) and queues nothing new. One replay runs per endpoint at a time (409 while one runs), and a workspace starts at most WEBHOOKS_MAX_REPLAYS_PER_DAY replays per UTC day (429). Only the workspace’s own events are read.',
  tags,
  security: ['session'],
  params: endpointParams,
  body: replayRequest,
  responses: {
    202: { description: 'Replay started', schema: replayBody },
    200: { description: 'This replay was asked for before: its progress', schema: replayBody },
    ...adminWrite,
    404: problem('Workspace or endpoint not found'),
    409: problem('The endpoint is disabled, or another replay of it is still running'),
    422: invalidInput(
      'Neither or both of since and sincePosition; since not an ISO time or in the future; sincePosition not an event’s position or past the newest event',
    ),
    429: {
      ...problem('The workspace started its replays for today (UTC); Retry-After says when the next may start'),
      headers: { 'Retry-After': 'Seconds until the next replay may start (the next UTC day)' },
    },
  },
});

export const listReplays = route({
  method: 'get',
  path: '/v1/workspaces/:ws/webhooks/:endpointId/replays',
  summary: 'The endpoint’s latest replays (newest first, at most 20) with their progress',
  description: 'Each replay the endpoint was asked for, with its progress. Admins only.',
  tags,
  security: ['session'],
  params: endpointParams,
  responses: {
    200: { description: 'The replays', schema: z.object({ replays: z.array(replayBody) }) },
    ...admin,
    404: problem('Workspace or endpoint not found'),
  },
});

export const getReplay = route({
  method: 'get',
  path: '/v1/workspaces/:ws/webhooks/:endpointId/replays/:replayId',
  summary: 'One replay’s progress and result',
  description: 'Poll it until it has finished. Admins only.',
  tags,
  security: ['session'],
  params: endpointParams.extend({ replayId: z.string() }),
  responses: { 200: { description: 'The replay', schema: replayBody }, ...admin, 404: problem('Workspace, endpoint or replay not found') },
});

export const routes: RouteContract[] = [
  registerEndpoint,
  listEndpoints,
  deleteEndpoint,
  rotateSecret,
  listDeliveries,
  resendDelivery,
  enableEndpoint,
  setBalanceThreshold,
  startReplay,
  listReplays,
  getReplay,
];
