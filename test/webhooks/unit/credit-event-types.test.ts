import { payloadOf, webhookEventTypes } from '../../../src/webhooks/event-types';

describe('credit grant webhook types', () => {
  test('a grant and its recorded expiry are subscribable, each from its own stored event', () => {
    expect(webhookEventTypes).toEqual(expect.arrayContaining(['credit.granted', 'credit.expired']));
    const data = { workspaceId: 'w1', grantId: 'g1', expiresAt: '2026-12-01T00:00:00.000Z' };
    expect(payloadOf({ type: 'CreditExpired', data, created: '2026-12-01T00:00:05.000Z' })).toEqual({
      type: 'credit.expired',
      timestamp: '2026-12-01T00:00:05.000Z',
      data,
    });
    expect(payloadOf({ type: 'CreditGranted', data: { ...data, amountNanoUsd: '5000000000' }, created: 'x' })?.type).toBe('credit.granted');
  });
});
