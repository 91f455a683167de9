import { targetText } from '../../../portal/src/pages/audit-text';
import { receiptRows } from '../../../portal/src/pages/receipt-rows';
import { dateTime, dateTimeSeconds } from '../../../portal/src/format';
import type { RequestReceipt } from '../../../portal/src/api-types';

/** What the new user's walk found on the receipt page and in the audit log, in the words the pages show. */

const receipt = (over: Partial<RequestReceipt>): RequestReceipt =>
  ({
    requestId: '3f2a0000-0000-4000-8000-000000000001',
    workspaceId: 'ws',
    key: { keyId: 'k', name: 'ci', last4: '9f3a' },
    config: 'service_3_pi',
    endpoint: 'inference',
    status: 'completed',
    maxTokens: 256,
    webSearch: false,
    promptTokens: 5,
    inputTokens: 5,
    outputTokens: 7,
    prices: { inputUsdPerToken: '0.0000025', outputUsdPerToken: '0.00001' },
    cost: '0.0000825',
    hold: { reserved: '0.0027', released: '0.0027' },
    finishReason: 'length',
    durationMs: 12,
    requestedAt: '2026-11-25T20:00:00.000Z',
    completedAt: '2026-11-25T20:00:00.012Z',
    debit: { position: '12', eventId: 'e' },
    ...over,
  }) as RequestReceipt;

test('the receipt shows the status and, under its own label, why generation ended', () => {
  const rows = new Map(receiptRows(receipt({})));
  expect(rows.get('Status')).toBe('completed');
  expect(rows.get('Finish reason')).toBe('max_tokens reached');
  const running = new Map(receiptRows(receipt({ status: 'open', finishReason: null })));
  expect([running.get('Status'), running.get('Finish reason')]).toEqual(['running', '—']);
});

test('audit times carry seconds, so rows of one minute show their order', () => {
  const a = dateTimeSeconds('2026-11-25T20:00:05.000Z');
  const b = dateTimeSeconds('2026-11-25T20:00:41.000Z');
  expect(a).not.toBe(b);
  expect(dateTime('2026-11-25T20:00:05.000Z')).toBe(dateTime('2026-11-25T20:00:41.000Z'));
});

test("an audit deposit row names the deposit's id and amount", () => {
  expect(targetText({ type: 'deposit', id: 'dep_123' } as never, { amount: '25' })).toBe('deposit dep_123 of $25.00');
  expect(targetText({ type: 'deposit', id: 'dep_123' } as never)).toBe('deposit dep_123');
});
