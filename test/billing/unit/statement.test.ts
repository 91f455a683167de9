import fc from 'fast-check';
import { monthlyStatement, statementMonthProblem, statementMonths } from '../../../src/billing/statement';
import { LedgerReplay } from '../../../src/billing/ledger';

const TYPES = ['DepositSucceeded', 'AutoReloadSucceeded', 'TokensDebited'] as const;
const MONTHS = ['2026-01', '2026-02', '2026-03', '2026-04'];

describe('monthly statements balance by construction', () => {
  test('any lines, in any order: each month opening + credits − debits = closing, closing = next opening = a ledger replay up to the month end', () => {
    const line = fc.record({
      ms: fc.integer({ min: Date.UTC(2026, 0, 1), max: Date.UTC(2026, 4, 1) - 1 }),
      type: fc.constantFrom(...TYPES),
      nano: fc.bigInt({ min: 1n, max: 10n ** 12n }),
      key: fc.constantFrom('k1', 'k2'),
      config: fc.constantFrom('service_3_pi', 'service_3_productivity'),
    });
    fc.assert(
      fc.property(fc.array(line, { maxLength: 60 }), (raw) => {
        const events = raw.map((l, i) => {
          const at = new Date(l.ms).toISOString();
          const data =
            l.type === 'TokensDebited'
              ? {
                  requestId: `r${i}`,
                  workspaceId: 'w',
                  keyId: l.key,
                  config: l.config,
                  inputTokens: 1,
                  outputTokens: 1,
                  inputPriceNanoUsd: '0',
                  outputPriceNanoUsd: '0',
                  amountNanoUsd: l.nano.toString(),
                }
              : {
                  workspaceId: 'w',
                  depositId: `d${i}`,
                  reloadId: `r${i}`,
                  amountNanoUsd: l.nano.toString(),
                  paymentIntentId: `pi_${i}`,
                  by: 'u',
                };
          return { id: `${i}`, stream: 's', revision: 0n, position: BigInt(i + 1), type: l.type, data, metadata: {}, created: at };
        });
        const replay = new LedgerReplay();
        const lines = events.map((e) => replay.apply(e as never)!).filter(Boolean);
        let previous = 0n;
        for (const m of MONTHS) {
          const st = monthlyStatement('w', m, [...lines].reverse());
          expect(st.opening).toBe(previous);
          expect(st.opening + st.deposited + st.reloaded - st.debited).toBe(st.closing);
          expect(st.closing).toBe(lines.filter((l) => l.at < st.periodEnd).reduce((n, l) => n + l.amount, 0n));
          expect(st.credits.every((c) => c.paymentReference?.startsWith('pi_'))).toBe(true);
          previous = st.closing;
        }
        expect(previous).toBe(replay.get('w').balance);
      }),
    );
  });

  test('which months: not a month, the future and before the workspace are refused; the list runs from creation to now', () => {
    const now = new Date('2026-11-25T12:00:00Z');
    expect(statementMonthProblem('2026-11', now, '2026-08-15T00:00:00Z')).toBeNull();
    expect(statementMonthProblem('2026-08', now, '2026-08-15T00:00:00Z')).toBeNull();
    expect(statementMonthProblem('2026-12', now, '2026-08-15T00:00:00Z')).toMatch(/has not begun/);
    expect(statementMonthProblem('2026-07', now, '2026-08-15T00:00:00Z')).toMatch(/created in 2026-08/);
    expect(statementMonthProblem('2026-1', now, '2026-08-15T00:00:00Z')).toMatch(/YYYY-MM/);
    expect(statementMonths('2026-08-15T00:00:00Z', now)).toEqual(['2026-11', '2026-10', '2026-09', '2026-08']);
  });
});
