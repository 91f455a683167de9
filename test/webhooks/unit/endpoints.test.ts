import { recorded } from '../../../src/platform/event';
import { decideEndpoints, endpointsDecider, MAX_ENDPOINTS, type EndpointsState } from '../../../src/webhooks/endpoints';
import type { WebhookEvent } from '../../../src/webhooks/events';
import { payloadOf } from '../../../src/webhooks/event-types';

const ws = 'ws1';
const fold = (events: WebhookEvent[]): EndpointsState =>
  events.reduce(
    (s, e, i) => endpointsDecider.evolve(s, recorded(e, '2026-01-01T00:00:00.000Z', BigInt(i + 1))),
    endpointsDecider.initial(),
  );
const regData = (endpointId: string) => ({
  workspaceId: ws,
  endpointId,
  url: 'https://x.test/',
  eventTypes: ['key.created'],
  secret: 'whsec_a',
  by: 'u',
});
const reg = (endpointId: string): WebhookEvent => ({ type: 'WebhookEndpointRegistered', data: regData(endpointId) });

describe('webhook endpoints decider', () => {
  test('register, rotate, disable once, delete', () => {
    let s = fold([reg('e1')]);
    expect(s.get('e1')).toMatchObject({ status: 'enabled', since: '1' });
    expect(decideEndpoints({ type: 'RegisterEndpoint', data: regData('e1') }, s)).toEqual([]);
    s = fold([
      reg('e1'),
      { type: 'WebhookEndpointSecretRotated', data: { workspaceId: ws, endpointId: 'e1', secret: 'whsec_b', by: 'u' } },
    ]);
    expect(s.get('e1')!.secret).toBe('whsec_b');
    const disable = { type: 'DisableEndpoint' as const, data: { workspaceId: ws, endpointId: 'e1', eventId: 'ev', reason: 'HTTP 500' } };
    const [disabled] = decideEndpoints(disable, s);
    expect(disabled.type).toBe('WebhookEndpointDisabled');
    expect(decideEndpoints(disable, fold([reg('e1'), disabled]))).toEqual([]);
    expect(() => decideEndpoints({ type: 'DeleteEndpoint', data: { workspaceId: ws, endpointId: 'nope', by: 'u' } }, s)).toThrow(
      'No webhook endpoint',
    );
  });

  test('enable: a disabled endpoint is enabled once; an enabled one writes nothing; an unknown one is not found', () => {
    const disabled: WebhookEvent = {
      type: 'WebhookEndpointDisabled',
      data: { workspaceId: ws, endpointId: 'e1', eventId: 'ev', reason: 'HTTP 500' },
    };
    const enable = { type: 'EnableEndpoint' as const, data: { workspaceId: ws, endpointId: 'e1', by: 'u' } };
    const [enabled] = decideEndpoints(enable, fold([reg('e1'), disabled]));
    expect(enabled.type).toBe('WebhookEndpointEnabled');
    expect(fold([reg('e1'), disabled, enabled]).get('e1')).toMatchObject({ status: 'enabled', disabledReason: null });
    expect(decideEndpoints(enable, fold([reg('e1'), disabled, enabled]))).toEqual([]);
    expect(() => decideEndpoints({ ...enable, data: { ...enable.data, endpointId: 'nope' } }, fold([reg('e1')]))).toThrow(
      'No webhook endpoint',
    );
  });

  test(`at most ${MAX_ENDPOINTS} endpoints`, () => {
    const s = fold(Array.from({ length: MAX_ENDPOINTS }, (_, i) => reg(`e${i}`)));
    expect(() => decideEndpoints({ type: 'RegisterEndpoint', data: regData('new') }, s)).toThrow(/at most/);
  });

  test('payloads map stored events to webhook types and drop key hashes', () => {
    const p = payloadOf({ type: 'ApiKeyDeleted', data: { workspaceId: ws, keyId: 'k', keyHash: 'h', by: 'u' }, created: 't' });
    expect(p).toEqual({ type: 'key.deleted', timestamp: 't', data: { workspaceId: ws, keyId: 'k', by: 'u' } });
    expect(payloadOf({ type: 'TokensDebited', data: {}, created: 't' })).toBeNull();
  });
});
