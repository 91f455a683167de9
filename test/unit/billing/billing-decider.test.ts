import fc from 'fast-check';
import {
  BillingRecord,
  BillingRules,
  BillingState,
  decideAttachPaymentMethod,
  decideConfigureAutoReload,
  decideDepositOutcome,
  decideReloadOutcome,
  decideRequestDeposit,
  decideTriggerReload,
  evolveBilling,
  foldBilling,
  initialBillingState,
  MAX_CHARGE,
  MIN_RELOAD,
} from '../../../src/domain/billing/billing';
import { depositIdFor, nameUuid, reloadIdFor } from '../../../src/domain/billing/ids';
import { LedgerReplay } from '../../../src/domain/billing/ledger';
import { DomainError } from '../../../src/domain/errors';
import type { Event } from '../../../src/domain/event';
import { usd } from '../../../src/domain/money';

const rules: BillingRules = { initialDeposit: usd(100), minDeposit: usd(10), minReload: MIN_RELOAD, maxCharge: MAX_CHARGE };
const WS = 'ws-1';

/** Applies decided events as if stored at `at`. */
function apply(state: BillingState, events: Event[], at = '2026-03-15T12:00:00.000Z'): BillingState {
  for (const e of events) state = evolveBilling(state, { type: e.type, data: e.data, created: at });
  return state;
}

const attach = (st: BillingState, pm = 'pm_card_visa') =>
  apply(st, decideAttachPaymentMethod(st, { workspaceId: WS, paymentMethodId: pm, brand: 'visa', last4: '4242', customerId: null, gateway: 'sandbox' }).events);

function expectDomainError(fn: () => unknown, code: string, message?: RegExp) {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(DomainError);
    expect((err as DomainError).code).toBe(code);
    if (message) expect((err as DomainError).message).toMatch(message);
    return;
  }
  throw new Error('expected a DomainError');
}

describe('ids', () => {
  test('name-based uuids are deterministic, version 5 layout, and differ by name', () => {
    expect(nameUuid('a')).toBe(nameUuid('a'));
    expect(nameUuid('a')).not.toBe(nameUuid('b'));
    expect(nameUuid('a')).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(depositIdFor('w1', 'k')).not.toBe(depositIdFor('w2', 'k'));
    expect(reloadIdFor('w1', 3n)).toBe(reloadIdFor('w1', 3n));
    expect(reloadIdFor('w1', 3n)).not.toBe(reloadIdFor('w1', 4n));
  });
});

describe('deposits', () => {
  test('need a card; the first is at least the initial deposit, later ones the minimum; whole cents only', () => {
    let st = initialBillingState();
    expectDomainError(() => decideRequestDeposit(st, { workspaceId: WS, depositId: 'd1', amount: usd(100), by: 'u', now: 'x' }, rules), 'conflict', /payment method/);
    st = attach(st);
    expectDomainError(() => decideRequestDeposit(st, { workspaceId: WS, depositId: 'd1', amount: usd(99), by: 'u', now: 'x' }, rules), 'invalid', /first deposit must be at least 100 USD/);
    expectDomainError(() => decideRequestDeposit(st, { workspaceId: WS, depositId: 'd1', amount: usd(100) + 1n, by: 'u', now: 'x' }, rules), 'invalid', /cents/);
    expectDomainError(() => decideRequestDeposit(st, { workspaceId: WS, depositId: 'd1', amount: usd(1_000_000), by: 'u', now: 'x' }, rules), 'invalid', /at most 999999.99/);
    const d = decideRequestDeposit(st, { workspaceId: WS, depositId: 'd1', amount: usd(100), by: 'u', now: 'x' }, rules);
    expect(d.events.map((e) => e.type)).toEqual(['DepositRequested']);
    st = apply(st, d.events);
    st = apply(st, decideDepositOutcome(st, { workspaceId: WS, depositId: 'd1', outcome: { status: 'succeeded', paymentIntentId: 'pi_1' } }).events);
    expect(st.deposited).toBe(usd(100));
    expectDomainError(() => decideRequestDeposit(st, { workspaceId: WS, depositId: 'd2', amount: usd(9), by: 'u', now: 'x' }, rules), 'invalid', /at least 10 USD/);
    expect(decideRequestDeposit(st, { workspaceId: WS, depositId: 'd2', amount: usd(10), by: 'u', now: 'x' }, rules).events).toHaveLength(1);
  });

  test('the same deposit id again: the existing deposit, or a conflict when the amount differs', () => {
    let st = attach(initialBillingState());
    st = apply(st, decideRequestDeposit(st, { workspaceId: WS, depositId: 'd1', amount: usd(100), by: 'u', now: 'x' }, rules).events);
    const again = decideRequestDeposit(st, { workspaceId: WS, depositId: 'd1', amount: usd(100), by: 'u', now: 'x' }, rules);
    expect(again.events).toEqual([]);
    expect(again.result).toMatchObject({ kind: 'existing', deposit: { status: 'requested' } });
    expectDomainError(() => decideRequestDeposit(st, { workspaceId: WS, depositId: 'd1', amount: usd(200), by: 'u', now: 'x' }, rules), 'conflict', /already used/);
  });

  test('the first outcome wins: a late webhook after the answer appends nothing', () => {
    let st = attach(initialBillingState());
    st = apply(st, decideRequestDeposit(st, { workspaceId: WS, depositId: 'd1', amount: usd(100), by: 'u', now: 'x' }, rules).events);
    const failed = decideDepositOutcome(st, { workspaceId: WS, depositId: 'd1', outcome: { status: 'failed', paymentIntentId: 'pi_1', code: 'card_declined', reason: 'no' } });
    expect(failed.events.map((e) => e.type)).toEqual(['DepositFailed']);
    st = apply(st, failed.events);
    expect(decideDepositOutcome(st, { workspaceId: WS, depositId: 'd1', outcome: { status: 'succeeded', paymentIntentId: 'pi_1' } }).events).toEqual([]);
    expectDomainError(() => decideDepositOutcome(st, { workspaceId: WS, depositId: 'nope', outcome: { status: 'succeeded', paymentIntentId: 'p' } }), 'not_found');
  });
});

describe('auto-reload', () => {
  const funded = () => {
    let st = attach(initialBillingState());
    st = apply(st, decideRequestDeposit(st, { workspaceId: WS, depositId: 'd0', amount: usd(100), by: 'u', now: 'x' }, rules).events);
    return apply(st, decideDepositOutcome(st, { workspaceId: WS, depositId: 'd0', outcome: { status: 'succeeded', paymentIntentId: 'pi_0' } }).events);
  };
  const configured = (cap: bigint | null = null) => {
    const st = funded();
    return apply(
      st,
      decideConfigureAutoReload(st, { workspaceId: WS, enabled: true, threshold: usd(20), amount: usd(20), monthlyCap: cap, by: 'u' }, rules).events,
    );
  };

  test('settings are validated', () => {
    const st = attach(initialBillingState());
    const cfg = (o: Partial<{ threshold: bigint; amount: bigint; monthlyCap: bigint | null; enabled: boolean }>) => () =>
      decideConfigureAutoReload(st, { workspaceId: WS, enabled: true, threshold: usd(5), amount: usd(10), monthlyCap: null, by: 'u', ...o }, rules);
    expectDomainError(cfg({ amount: usd(10) - 1n }), 'invalid', /cents/);
    expectDomainError(cfg({ amount: usd(9) }), 'invalid', /at least 10 USD/);
    expectDomainError(cfg({ threshold: -1n }), 'invalid');
    expectDomainError(cfg({ monthlyCap: usd(5) }), 'invalid', /monthlyCap/);
    // A threshold above the amount would leave the balance below it after a reload: every debit would charge again.
    expectDomainError(cfg({ threshold: usd(10) + 1n }), 'invalid', /threshold must be at most the reload amount/);
    expectDomainError(cfg({ threshold: usd(999_999_999) }), 'invalid', /threshold/);
    expect(cfg({ threshold: usd(10) })().events).toHaveLength(1);
    expectDomainError(cfg({ monthlyCap: usd(100_000_000) }), 'invalid', /monthlyCap must be at most/);
    try {
      cfg({ threshold: usd(11) })();
    } catch (err) {
      expect((err as DomainError).field).toBe('threshold');
    }
    expect(cfg({})().events).toHaveLength(1);
    expect(cfg({ threshold: 0n })().events).toHaveLength(1);
    expectDomainError(
      () => decideConfigureAutoReload(initialBillingState(), { workspaceId: WS, enabled: true, threshold: 0n, amount: usd(10), monthlyCap: null, by: 'u' }, rules),
      'conflict',
    );
  });

  test('triggers below the threshold only; one in flight; a failure suspends; a new card or PUT re-enables', () => {
    let st = configured();
    const now = '2026-03-15T12:00:00.000Z';
    expect(decideTriggerReload(st, { workspaceId: WS, reloadId: 'r1', balance: usd(20), now }).result).toMatchObject({ triggered: false, skip: 'above_threshold' });
    const t = decideTriggerReload(st, { workspaceId: WS, reloadId: 'r1', balance: usd(19), now });
    expect(t.events).toEqual([{ type: 'AutoReloadTriggered', data: { workspaceId: WS, reloadId: 'r1', amountNanoUsd: usd(20).toString(), balanceNanoUsd: usd(19).toString() } }]);
    st = apply(st, t.events);
    expect(decideTriggerReload(st, { workspaceId: WS, reloadId: 'r2', balance: 0n, now }).result).toMatchObject({ triggered: false, skip: 'in_flight', inFlight: 'r1' });
    const failed = decideReloadOutcome(st, { workspaceId: WS, reloadId: 'r1', outcome: { status: 'failed', paymentIntentId: 'pi', code: 'generic_decline', reason: 'Your card was declined.' } });
    expect(failed.events.map((e) => e.type)).toEqual(['AutoReloadFailed', 'AutoReloadSuspended']);
    st = apply(st, failed.events);
    expect(st.suspended).not.toBeNull();
    expect(decideReloadOutcome(st, { workspaceId: WS, reloadId: 'r1', outcome: { status: 'succeeded', paymentIntentId: 'pi' } }).events).toEqual([]);
    expect(decideTriggerReload(st, { workspaceId: WS, reloadId: 'r2', balance: 0n, now }).result).toMatchObject({ skip: 'suspended' });
    const reattached = attach(st, 'pm_card_mastercard');
    expect(reattached.suspended).toBeNull();
    expect(decideTriggerReload(reattached, { workspaceId: WS, reloadId: 'r2', balance: 0n, now }).result.triggered).toBe(true);
  });

  test('settings recorded before the threshold rule act on a threshold capped at the amount: one reload, not one per debit', () => {
    const st = apply(funded(), [
      {
        type: 'AutoReloadConfigured',
        data: { workspaceId: WS, enabled: true, thresholdNanoUsd: usd(999_999_999).toString(), amountNanoUsd: usd(20).toString(), monthlyCapNanoUsd: null, by: 'u' },
      },
    ]);
    const now = '2026-03-15T12:00:00.000Z';
    expect(decideTriggerReload(st, { workspaceId: WS, reloadId: 'r1', balance: usd(19), now }).result.triggered).toBe(true);
    // After the reload the balance is at least the amount: no second charge.
    expect(decideTriggerReload(st, { workspaceId: WS, reloadId: 'r1', balance: usd(20), now }).result).toMatchObject({ skip: 'above_threshold' });
  });

  test('nothing to top up before the first deposit', () => {
    let st = attach(initialBillingState());
    st = apply(st, decideConfigureAutoReload(st, { workspaceId: WS, enabled: true, threshold: usd(20), amount: usd(20), monthlyCap: null, by: 'u' }, rules).events);
    expect(decideTriggerReload(st, { workspaceId: WS, reloadId: 'r1', balance: 0n, now: 'x' }).result).toMatchObject({ triggered: false, skip: 'no_deposit' });
  });

  test('the reload remembers the card on file when it was triggered (a retry sends the same charge)', () => {
    let st = configured();
    st = apply(st, decideTriggerReload(st, { workspaceId: WS, reloadId: 'r1', balance: 0n, now: '2026-03-15T00:00:00Z' }).events);
    st = attach(st, 'pm_card_amex');
    expect(st.reloads.get('r1')!.paymentMethodId).toBe('pm_card_visa');
  });

  test('the monthly cap counts reloads triggered in the UTC month and not failed', () => {
    let st = configured(usd(40));
    const march = '2026-03-31T23:59:00.000Z';
    for (const id of ['r1', 'r2']) {
      const t = decideTriggerReload(st, { workspaceId: WS, reloadId: id, balance: 0n, now: march });
      expect(t.result.triggered).toBe(true);
      st = apply(st, t.events, march);
      st = apply(st, decideReloadOutcome(st, { workspaceId: WS, reloadId: id, outcome: { status: 'succeeded', paymentIntentId: `pi_${id}` } }).events, march);
    }
    expect(decideTriggerReload(st, { workspaceId: WS, reloadId: 'r3', balance: 0n, now: march }).result).toMatchObject({ skip: 'monthly_cap' });
    expect(decideTriggerReload(st, { workspaceId: WS, reloadId: 'r3', balance: 0n, now: '2026-04-01T00:00:00.000Z' }).result.triggered).toBe(true);
  });
});

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
        let st = initialBillingState();
        const log: BillingRecord[] = [];
        const at = '2026-05-10T10:00:00.000Z';
        let n = 0;
        const push = (events: Event[]) => {
          for (const e of events) {
            log.push({ type: e.type, data: e.data, created: at });
            st = evolveBilling(st, { type: e.type, data: e.data, created: at });
          }
        };
        for (const k of cmds) {
          n++;
          try {
            switch (k.c) {
              case 'attach':
                push(decideAttachPaymentMethod(st, { workspaceId: WS, paymentMethodId: k.good ? `pm_ok_${n}` : `pm_bad_${n}`, brand: 'visa', last4: '0000', customerId: null, gateway: 'sandbox' }).events);
                break;
              case 'configure':
                push(
                  decideConfigureAutoReload(
                    st,
                    { workspaceId: WS, enabled: k.enabled, threshold: usd(k.threshold), amount: usd(k.amount), monthlyCap: k.cap === null ? null : usd(k.cap), by: 'u' },
                    rules,
                  ).events,
                );
                break;
              case 'trigger': {
                const before = st;
                const wasSuspended = !!before.suspended;
                const enabled = !!before.autoReload?.enabled;
                const inFlight = before.inFlight;
                const d = decideTriggerReload(st, { workspaceId: WS, reloadId: `r${n}`, balance: usd(k.balance), now: at });
                if (d.events.length) {
                  expect(wasSuspended).toBe(false);
                  expect(enabled).toBe(true);
                  expect(inFlight).toBeNull();
                  expect(usd(k.balance) < before.autoReload!.threshold).toBe(true);
                }
                push(d.events);
                break;
              }
              case 'settle':
                if (st.inFlight) {
                  push(
                    decideReloadOutcome(st, {
                      workspaceId: WS,
                      reloadId: st.inFlight,
                      outcome: k.ok ? { status: 'succeeded', paymentIntentId: `pi${n}` } : { status: 'failed', paymentIntentId: null, code: 'card_declined', reason: 'x' },
                    }).events,
                  );
                }
                break;
              case 'deposit': {
                const d = decideRequestDeposit(st, { workspaceId: WS, depositId: `d${n}`, amount: usd(k.amount), by: 'u', now: at }, rules);
                push(d.events);
                push(decideDepositOutcome(st, { workspaceId: WS, depositId: `d${n}`, outcome: { status: 'succeeded', paymentIntentId: `pi${n}` } }).events);
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
        const replayed = foldBilling(log);
        expect(replayed).toEqual(st);
        const money = new LedgerReplay();
        log.forEach((e, i) => money.apply({ ...e, position: BigInt(i + 1) }));
        expect(money.get(WS).deposited).toBe(st.deposited);
        expect(money.get(WS).reloaded).toBe(st.reloaded);
      }),
      { numRuns: 300 },
    );
  });
});
