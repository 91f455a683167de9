import { payloadOf, storedEventTypes, webhookEventTypes } from '../../../src/webhooks/event-types';

describe('key budget webhook types', () => {
  test('80% and 100% of a key budget are subscribable types, each from its own stored event', () => {
    expect(webhookEventTypes).toEqual(expect.arrayContaining(['key.budget_80_percent', 'key.budget_100_percent']));
    expect(storedEventTypes).toEqual(expect.arrayContaining(['KeyBudget80PercentReached', 'KeyBudget100PercentReached']));
  });

  test('the payload carries the period, the budget and the spend', () => {
    const data = {
      workspaceId: 'w1',
      keyId: 'k1',
      thresholdPercent: 100,
      budgetNanoUsd: '1000',
      spentNanoUsd: '1050',
      period: 'daily',
      periodId: '2026-11-25',
      periodStart: '2026-11-25T00:00:00.000Z',
      resetsAt: '2026-11-26T00:00:00.000Z',
      requestId: 'r1',
    };
    expect(payloadOf({ type: 'KeyBudget100PercentReached', data, created: '2026-11-25T10:00:00.000Z' })).toEqual({
      type: 'key.budget_100_percent',
      timestamp: '2026-11-25T10:00:00.000Z',
      data,
    });
    expect(
      payloadOf({ type: 'KeyBudget80PercentReached', data: { ...data, thresholdPercent: 80 }, created: '2026-11-25T09:00:00.000Z' })?.type,
    ).toBe('key.budget_80_percent');
  });
});
