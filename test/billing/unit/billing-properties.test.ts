import fc from 'fast-check';
import type { BillingCommand } from '../../../src/billing/commands';
import { decide } from '../../../src/billing/decide';
import type { BillingEvent } from '../../../src/billing/events';
import { LedgerReplay } from '../../../src/billing/ledger';
import { evolve, fold } from '../../../src/billing/evolve';
import { type BillingState, initialBillingState } from '../../../src/billing/state';
import { DomainError } from '../../../src/platform/errors';
import { type EventRecord, recorded } from '../../../src/platform/event';
import { usd } from '../../../src/platform/money';
import { attach, configureAutoReload, recordDepositOutcome, recordReloadOutcome, requestDeposit, triggerReload, WS } from './events';

describe('decider properties (fast-check)', () => {
  type Cmd =
    | { c: 'attach'; good: boolean }
    | { c: 'configure'; enabled: boolean; threshold: number; amount: number; cap: number | null }
    | { c: 'trigger'; balance: number }
    | { c: 'settle'; ok: boolean }
    | { c: 'deposit'; amount: number };
  const cmd: fc.Arbitrary<Cmd> = fc.oneof(
    fc.record({ c: fc.constant('attach' as const), good: fc.boolean() }),
    fc.record({
      c: fc.constant('configure' as const),
      enabled: fc.boolean(),
      threshold: fc.integer({ min: 0, max: 200 }),
      amount: fc.integer({ min: 5, max: 100 }),
      cap: fc.option(fc.integer({ min: 5, max: 300 }), { nil: null }),
    }),
    fc.record({ c: fc.constant('trigger' as const), balance: fc.integer({ min: 0, max: 300 }) }),
    fc.record({ c: fc.constant('settle' as const), ok: fc.boolean() }),
    fc.record({ c: fc.constant('deposit' as const), amount: fc.integer({ min: 1, max: 300 }) }),
  );

  test('at most one reload in flight, no reload while suspended or disabled, the cap holds, and the fold of the events is the state', () => {
    fc.assert(
      fc.property(fc.array(cmd, { maxLength: 60 }), (cmds) => {
        let st: BillingState = initialBillingState();
        const log: EventRecord<BillingEvent>[] = [];
        const at = '2026-05-10T10:00:00.000Z';
        let n = 0;
        const run = (c: BillingCommand) => {
          const events = decide(c, st);
          for (const e of events) {
            log.push(recorded(e, at, BigInt(log.length + 1)));
            st = evolve(st, recorded(e, at));
          }
          return events;
        };
        for (const k of cmds) {
          n++;
          try {
            switch (k.c) {
              case 'attach':
                run(attach(k.good ? `pm_ok_${n}` : `pm_bad_${n}`));
                break;
              case 'configure':
                run(
                  configureAutoReload({
                    enabled: k.enabled,
                    threshold: usd(k.threshold),
                    amount: usd(k.amount),
                    monthlyCap: k.cap === null ? null : usd(k.cap),
                  }),
                );
                break;
              case 'trigger': {
                const before = st;
                const wasSuspended = !!before.suspended;
                const enabled = !!before.autoReload?.enabled;
                const inFlight = before.inFlight;
                const events = run(triggerReload(`r${n}`, usd(k.balance), at));
                if (events.length) {
                  expect(wasSuspended).toBe(false);
                  expect(enabled).toBe(true);
                  expect(inFlight).toBeNull();
                  expect(usd(k.balance) < before.autoReload!.threshold).toBe(true);
                }
                break;
              }
              case 'settle':
                if (st.inFlight) {
                  run(
                    recordReloadOutcome(
                      st.inFlight,
                      k.ok
                        ? { status: 'succeeded', paymentIntentId: `pi${n}` }
                        : { status: 'failed', paymentIntentId: null, code: 'card_declined', reason: 'x' },
                    ),
                  );
                }
                break;
              case 'deposit': {
                run(requestDeposit(`d${n}`, usd(k.amount)));
                run(recordDepositOutcome(`d${n}`, { status: 'succeeded', paymentIntentId: `pi${n}` }));
                break;
              }
            }
          } catch (err) {
            if (!(err instanceof DomainError)) throw err;
          }
          const inFlight = [...st.reloads.values()].filter((r) => r.status === 'in_flight');
          expect(inFlight.length).toBeLessThanOrEqual(1);
          expect(st.inFlight ?? null).toBe(inFlight[0]?.reloadId ?? null);
          const cap = st.autoReload?.monthlyCap;
          const month = st.reloadedByMonth.get('2026-05') ?? 0n;
          expect(month >= 0n).toBe(true);
          if (cap != null && log.at(-1)?.type === 'AutoReloadTriggered') expect(month <= cap).toBe(true);
        }
        // Replaying the log gives the same state; the money replay agrees with it.
        const replayed = fold(log);
        expect(replayed).toEqual(st);
        const money = new LedgerReplay();
        log.forEach((e) => money.apply(e));
        expect(money.get(WS).deposited).toBe(st.deposited);
        expect(money.get(WS).reloaded).toBe(st.reloaded);
      }),
      { numRuns: 300 },
    );
  });
});
