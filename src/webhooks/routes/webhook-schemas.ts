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
  attempts: z.array(z.object({ at: z.string(), status: z.number().nullable().describe('The receiver’s HTTP status, null if none'), error: z.string().nullable() })),
  created: z.string(),
  payload: z.string().describe('The exact JSON body sent'),
});

const registerBody = z.object({
  url: z.string({ error: 'url must be a string' }).max(2048, 'url must be at most 2048 characters long'),
  eventTypes: z.array(z.string(), { error: 'eventTypes must be a list of event types' }).min(1, 'eventTypes must name at least one event type'),
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
    422: invalidInput('A URL that is not http(s) or points to a private, loopback or link-local address (loc body.url); an unknown event type (body.eventTypes)'),
  },
});

export const listEndpoints = route({
  method: 'get',
  path: '/v1/workspaces/:ws/webhooks',
  summary: 'The workspace’s webhook endpoints (without secrets)',
  tags,
  security: ['session'],
  params: wsParams,
  responses: { 200: { description: 'The endpoints', schema: z.object({ endpoints: z.array(endpointBody), eventTypes: z.array(z.string()) }) }, ...admin },
});

export const deleteEndpoint = route({
  method: 'delete',
  path: '/v1/workspaces/:ws/webhooks/:endpointId',
  summary: 'Delete a webhook endpoint: nothing more is sent to it',
  tags,
  security: ['session'],
  params: endpointParams,
  responses: { 204: { description: 'Deleted' }, ...adminWrite, 404: problem('Workspace or endpoint not found') },
});

export const rotateSecret = route({
  method: 'post',
  path: '/v1/workspaces/:ws/webhooks/:endpointId/rotate-secret',
  summary: 'A new signing secret, used from the next attempt on; shown once',
  tags,
  security: ['session'],
  params: endpointParams,
  responses: { 200: { description: 'Rotated', schema: endpointWithSecretBody }, ...adminWrite, 404: problem('Workspace or endpoint not found') },
});

export const listDeliveries = route({
  method: 'get',
  path: '/v1/workspaces/:ws/webhooks/:endpointId/deliveries',
  summary: 'The endpoint’s latest deliveries (newest first, at most 100) with every attempt',
  tags,
  security: ['session'],
  params: endpointParams,
  responses: { 200: { description: 'The deliveries', schema: z.object({ deliveries: z.array(deliveryBody) }) }, ...admin, 404: problem('Workspace or endpoint not found') },
});

export const resendDelivery = route({
  method: 'post',
  path: '/v1/workspaces/:ws/webhooks/:endpointId/deliveries/:deliveryId/resend',
  summary: 'Send one delivery again (same webhook-id and body, signed anew)',
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

export const routes: RouteContract[] = [registerEndpoint, listEndpoints, deleteEndpoint, rotateSecret, listDeliveries, resendDelivery];
