import { assertNever, type EventRecord } from '../platform/event';
import { DomainError } from '../platform/errors';
import type { WebhookEvent, WebhookReplayRequested } from './events';

/** The endpoints of one workspace (webhooks-{ws}), folded from its events. Pure: no I/O, clock or randomness. */

export interface Endpoint {
  endpointId: string;
  url: string;
  eventTypes: string[];
  secret: string;
  status: 'enabled' | 'disabled';
  created: string;
  /** Global position of its registration: it is sent only events after it (decimal string). */
  since: string;
  disabledReason: string | null;
}

export type EndpointsState = Map<string, Endpoint>;

export type WebhookCommand =
  | {
      type: 'RegisterEndpoint';
      data: { workspaceId: string; endpointId: string; url: string; eventTypes: string[]; secret: string; by: string };
    }
  | { type: 'RotateEndpointSecret'; data: { workspaceId: string; endpointId: string; secret: string; by: string } }
  | { type: 'DeleteEndpoint'; data: { workspaceId: string; endpointId: string; by: string } }
  | { type: 'DisableEndpoint'; data: { workspaceId: string; endpointId: string; eventId: string; reason: string } }
  | { type: 'EnableEndpoint'; data: { workspaceId: string; endpointId: string; by: string } }
  | { type: 'SetBalanceThreshold'; data: { workspaceId: string; thresholdNanoUsd: string | null; by: string } }
  | { type: 'RecordReplay'; data: WebhookReplayRequested['data'] };

/** At most this many endpoints per workspace: each event is delivered once per endpoint. */
export const MAX_ENDPOINTS = 20;

export function evolveEndpoints(state: EndpointsState, e: EventRecord<WebhookEvent>): EndpointsState {
  const next = new Map(state);
  switch (e.type) {
    case 'WebhookEndpointRegistered':
      next.set(e.data.endpointId, {
        endpointId: e.data.endpointId,
        url: e.data.url,
        eventTypes: e.data.eventTypes,
        secret: e.data.secret,
        status: 'enabled',
        created: e.created,
        since: e.position.toString(),
        disabledReason: null,
      });
      break;
    case 'WebhookEndpointSecretRotated': {
      const ep = next.get(e.data.endpointId);
      if (ep) next.set(e.data.endpointId, { ...ep, secret: e.data.secret });
      break;
    }
    case 'WebhookEndpointDeleted':
      next.delete(e.data.endpointId);
      break;
    case 'WebhookEndpointDisabled': {
      const ep = next.get(e.data.endpointId);
      if (ep) next.set(e.data.endpointId, { ...ep, status: 'disabled', disabledReason: e.data.reason });
      break;
    }
    case 'WebhookEndpointEnabled': {
      const ep = next.get(e.data.endpointId);
      if (ep) next.set(e.data.endpointId, { ...ep, status: 'enabled', disabledReason: null });
      break;
    }
    case 'BalanceAlertThresholdSet':
    case 'WebhookReplayRequested':
      break;
    default:
      assertNever(e);
  }
  return next;
}

const known = (s: EndpointsState, id: string) => {
  const ep = s.get(id);
  if (!ep) throw new DomainError('not_found', 'No webhook endpoint with this id');
  return ep;
};

export function decideEndpoints(cmd: WebhookCommand, s: EndpointsState): WebhookEvent[] {
  switch (cmd.type) {
    case 'RegisterEndpoint':
      if (s.has(cmd.data.endpointId)) return [];
      if (s.size >= MAX_ENDPOINTS) throw new DomainError('conflict', `A workspace has at most ${MAX_ENDPOINTS} webhook endpoints`);
      return [{ type: 'WebhookEndpointRegistered', data: cmd.data }];
    case 'RotateEndpointSecret':
      known(s, cmd.data.endpointId);
      return [{ type: 'WebhookEndpointSecretRotated', data: cmd.data }];
    case 'DeleteEndpoint':
      known(s, cmd.data.endpointId);
      return [{ type: 'WebhookEndpointDeleted', data: cmd.data }];
    case 'DisableEndpoint': {
      // Deleted or already disabled: nothing to do (a second exhausted delivery, a late job).
      const ep = s.get(cmd.data.endpointId);
      return ep && ep.status === 'enabled' ? [{ type: 'WebhookEndpointDisabled', data: cmd.data }] : [];
    }
    case 'EnableEndpoint':
      // Enabling an enabled endpoint writes nothing (a double click).
      return known(s, cmd.data.endpointId).status === 'disabled' ? [{ type: 'WebhookEndpointEnabled', data: cmd.data }] : [];
    case 'SetBalanceThreshold':
      return [{ type: 'BalanceAlertThresholdSet', data: cmd.data }];
    case 'RecordReplay':
      known(s, cmd.data.endpointId);
      return [{ type: 'WebhookReplayRequested', data: cmd.data }];
    default:
      return assertNever(cmd);
  }
}

export const endpointsDecider = { initial: (): EndpointsState => new Map(), evolve: evolveEndpoints };
