import fc from 'fast-check';
import type { MoneyEvent } from '../../../src/billing/ledger';
import { ledgerEntryJsonHead, ledgerEntryOf } from '../../../src/billing/projections/ledger/projection';
import { type EventRecord } from '../../../src/platform/event';

/** What the ledger projection wrote before it built the text itself: the generic form, `"}` cut off. */
const generic = (e: EventRecord<MoneyEvent>) => JSON.stringify({ ...ledgerEntryOf(e), balanceNanoUsd: '' }).slice(0, -2);

describe('ledgerEntryJsonHead', () => {
  // Any text, including quotes, backslashes, control characters and lone surrogates.
  const text = fc.string({ unit: 'binary' });
  const amount = fc.bigInt({ min: -(10n ** 20n), max: 10n ** 20n }).map(String);
  const base = { created: fc.date({ noInvalidDate: true }).map((d) => d.toISOString()), position: fc.bigInt({ min: 0n, max: 2n ** 64n }) };
  const event: fc.Arbitrary<EventRecord<MoneyEvent>> = fc.oneof(
    fc.record({
      ...base,
      type: fc.constant('DepositSucceeded' as const),
      data: fc.record({ workspaceId: text, depositId: text, amountNanoUsd: amount, paymentIntentId: text, by: text }),
    }),
    fc.record({
      ...base,
      type: fc.constant('AutoReloadSucceeded' as const),
      data: fc.record({ workspaceId: text, reloadId: text, amountNanoUsd: amount, paymentIntentId: text }),
    }),
    fc.record({
      ...base,
      type: fc.constant('CreditNoteIssued' as const),
      data: fc.record({ workspaceId: text, creditNoteId: text, requestId: text, amountNanoUsd: amount, reason: text, by: text }),
    }),
    fc.record({
      ...base,
      type: fc.constant('TokensDebited' as const),
      data: fc.record({
        requestId: text,
        workspaceId: text,
        keyId: text,
        config: text,
        inputTokens: fc.nat(),
        outputTokens: fc.nat(),
        amountNanoUsd: amount,
      }),
    }),
  ) as fc.Arbitrary<EventRecord<MoneyEvent>>;

  it('writes exactly the text JSON.stringify writes for the entry', () => {
    fc.assert(
      fc.property(event, (e) => expect(ledgerEntryJsonHead(e)).toBe(generic(e))),
      { numRuns: 2000 },
    );
  });

  it('leaves out an optional field that is missing, as JSON.stringify does', () => {
    const e = {
      type: 'DepositSucceeded',
      created: '2026-11-26T00:00:00.000Z',
      position: 7n,
      data: { workspaceId: 'w', depositId: 'd', amountNanoUsd: '5' },
    } as unknown as EventRecord<MoneyEvent>;
    expect(ledgerEntryJsonHead(e)).toBe(generic(e));
    expect(ledgerEntryJsonHead(e)).toBe(
      '{"position":"7","at":"2026-11-26T00:00:00.000Z","type":"DepositSucceeded","ref":"d","amountNanoUsd":"5","balanceNanoUsd":"',
    );
  });
});
