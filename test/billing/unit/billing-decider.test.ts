import type { BillingCommand } from '../../../src/billing/commands';
import { billingDecider, decide } from '../../../src/billing/decide';
import { depositIdFor, nameUuid, reloadIdFor } from '../../../src/billing/ids';
import { reloadBlocker } from '../../../src/billing/rules';
import { evolve, evolveDecided } from '../../../src/billing/evolve';
import { DomainError } from '../../../src/platform/errors';
import { recorded } from '../../../src/platform/event';
import { usd } from '../../../src/platform/money';
import { scenario } from '../../support/gwt';
import {
  attach,
  attached,
  autoReloadConfigured,
  configureAutoReload,
  depositFailed,
  depositRequested,
  depositSucceeded,
  funded,
  recordDepositOutcome,
  recordReloadOutcome,
  reloadFailed,
  reloadSucceeded,
  reloadTriggered,
  requestDeposit,
  triggerReload,
} from './events';

const NOW = '2026-03-15T12:00:00.000Z';
const billing = scenario(billingDecider, (c: BillingCommand, s) => decide(c, s), { at: NOW });

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

describe('evolve', () => {
  test('returns a new state and leaves the one it was given as it was', () => {
    const before = billing.given(...funded()).state;
    const snapshot = { ...before, deposits: new Map(before.deposits) };
    const after = evolve(before, recorded(depositSucceeded('d0', usd(50), 'pi_again'), NOW));
    expect(after).not.toBe(before);
    expect(after.deposited).toBe(usd(150));
    expect(before).toEqual(snapshot);
    expect(before.deposits.get('d0')!.amount).toBe(usd(100));
  });
});

describe('deposits', () => {
  test('need a card; the first is at least the initial deposit, later ones the minimum; whole cents only', () => {
    billing
      .given()
      .when(requestDeposit('d1', usd(100)))
      .thenFails('conflict', /payment method/);
    billing
      .given(attached())
      .when(requestDeposit('d1', usd(99)))
      .thenFails('invalid', /first deposit must be at least 100 USD/);
    billing
      .given(attached())
      .when(requestDeposit('d1', usd(100) + 1n))
      .thenFails('invalid', /cents/);
    billing
      .given(attached())
      .when(requestDeposit('d1', usd(1_000_000)))
      .thenFails('invalid', /at most 999999.99/);
    billing
      .given(attached())
      .when(requestDeposit('d1', usd(100)))
      .then(depositRequested('d1', usd(100)));
    billing
      .given(attached(), depositRequested('d1', usd(100)))
      .when(recordDepositOutcome('d1', { status: 'succeeded', paymentIntentId: 'pi_1' }))
      .then(depositSucceeded('d1', usd(100), 'pi_1'));
    const deposited = billing.given(attached(), depositRequested('d1', usd(100)), depositSucceeded('d1', usd(100), 'pi_1'));
    expect(deposited.state.deposited).toBe(usd(100));
    deposited.when(requestDeposit('d2', usd(9))).thenFails('invalid', /at least 10 USD/);
    deposited.when(requestDeposit('d2', usd(10))).then(depositRequested('d2', usd(10)));
  });

  test('the same deposit id again: the existing deposit, or a conflict when the amount differs', () => {
    const requested = billing.given(attached(), depositRequested('d1', usd(100)));
    requested.when(requestDeposit('d1', usd(100))).thenNothing();
    expect(requested.state.deposits.get('d1')).toMatchObject({ status: 'requested' });
    requested.when(requestDeposit('d1', usd(200))).thenFails('conflict', /already used/);
  });

  test('the result of a decision is the state after its events: the deposit requested now, on the card on file', () => {
    const st = billing.given(attached()).state;
    const after = evolveDecided(st, decide(requestDeposit('d1', usd(100)), st), '2026-03-16T08:00:00.000Z');
    expect(after.deposits.get('d1')).toMatchObject({
      status: 'requested',
      amount: usd(100),
      requestedAt: '2026-03-16T08:00:00.000Z',
      paymentMethodId: 'pm_card_visa',
    });
  });

  test('the first outcome wins: a late webhook after the answer appends nothing', () => {
    const failed = { status: 'failed', paymentIntentId: 'pi_1', code: 'card_declined', reason: 'no' } as const;
    billing
      .given(attached(), depositRequested('d1', usd(100)))
      .when(recordDepositOutcome('d1', failed))
      .then(depositFailed('d1', usd(100), 'pi_1', 'card_declined', 'no'));
    const settled = billing.given(
      attached(),
      depositRequested('d1', usd(100)),
      depositFailed('d1', usd(100), 'pi_1', 'card_declined', 'no'),
    );
    settled.when(recordDepositOutcome('d1', { status: 'succeeded', paymentIntentId: 'pi_1' })).thenNothing();
    settled.when(recordDepositOutcome('nope', { status: 'succeeded', paymentIntentId: 'p' })).thenFails('not_found', /nope/);
  });
});

describe('auto-reload', () => {
  const configured = (cap: bigint | null = null) => [
    ...funded(),
    autoReloadConfigured({ threshold: usd(20), amount: usd(20), monthlyCap: cap }),
  ];

  test('settings are validated', () => {
    const onFile = billing.given(attached());
    onFile.when(configureAutoReload({ amount: usd(10) - 1n })).thenFails('invalid', /cents/);
    onFile.when(configureAutoReload({ amount: usd(9) })).thenFails('invalid', /at least 10 USD/);
    onFile.when(configureAutoReload({ threshold: -1n })).thenFails('invalid', /threshold/);
    onFile.when(configureAutoReload({ monthlyCap: usd(5) })).thenFails('invalid', /monthlyCap/);
    // A threshold above the amount would leave the balance below it after a reload: every debit would charge again.
    onFile.when(configureAutoReload({ threshold: usd(10) + 1n })).thenFails('invalid', /threshold must be at most the reload amount/);
    onFile.when(configureAutoReload({ threshold: usd(999_999_999) })).thenFails('invalid', /threshold/);
    onFile
      .when(configureAutoReload({ threshold: usd(10) }))
      .then(autoReloadConfigured({ threshold: usd(10), amount: usd(10), monthlyCap: null }));
    onFile.when(configureAutoReload({ monthlyCap: usd(100_000_000) })).thenFails('invalid', /monthlyCap must be at most/);
    let caught: unknown;
    try {
      decide(configureAutoReload({ threshold: usd(11) }), onFile.state);
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(DomainError);
    expect((caught as DomainError).field).toBe('threshold');
    onFile.when(configureAutoReload({})).then(autoReloadConfigured({ threshold: usd(5), amount: usd(10), monthlyCap: null }));
    onFile.when(configureAutoReload({ threshold: 0n })).then(autoReloadConfigured({ threshold: 0n, amount: usd(10), monthlyCap: null }));
    billing
      .given()
      .when(configureAutoReload({ threshold: 0n }))
      .thenFails('conflict', /Attach a payment method/);
  });

  test('triggers below the threshold only; one in flight; a failure suspends; a new card or PUT re-enables', () => {
    const ready = billing.given(...configured());
    ready.when(triggerReload('r1', usd(20))).thenNothing();
    expect(reloadBlocker(ready.state, usd(20), NOW)).toBe('above_threshold');
    ready.when(triggerReload('r1', usd(19))).then(reloadTriggered('r1', usd(20), usd(19)));

    const inFlight = billing.given(...configured(), reloadTriggered('r1', usd(20), usd(19)));
    inFlight.when(triggerReload('r2', 0n)).thenNothing();
    expect(reloadBlocker(inFlight.state, 0n, NOW)).toBe('in_flight');
    expect(inFlight.state.inFlight).toBe('r1');
    const declined = { status: 'failed', paymentIntentId: 'pi', code: 'generic_decline', reason: 'Your card was declined.' } as const;
    inFlight
      .when(recordReloadOutcome('r1', declined))
      .then(...reloadFailed('r1', usd(20), 'pi', 'generic_decline', 'Your card was declined.'));

    const suspended = [
      ...configured(),
      reloadTriggered('r1', usd(20), usd(19)),
      ...reloadFailed('r1', usd(20), 'pi', 'generic_decline', 'Your card was declined.'),
    ];
    const afterFailure = billing.given(...suspended);
    expect(afterFailure.state.suspended).not.toBeNull();
    afterFailure.when(recordReloadOutcome('r1', { status: 'succeeded', paymentIntentId: 'pi' })).thenNothing();
    afterFailure.when(triggerReload('r2', 0n)).thenNothing();
    expect(reloadBlocker(afterFailure.state, 0n, NOW)).toBe('suspended');

    const reattached = billing.given(...suspended, attached('pm_card_mastercard'));
    expect(reattached.state.suspended).toBeNull();
    reattached.when(triggerReload('r2', 0n)).then(reloadTriggered('r2', usd(20), 0n));
    billing
      .given(...suspended)
      .when(attach('pm_card_visa'))
      .then(attached('pm_card_visa'));
    billing
      .given(...configured())
      .when(attach('pm_card_visa'))
      .thenNothing();
  });

  test('settings recorded before the threshold rule act on a threshold capped at the amount: one reload, not one per debit', () => {
    const old = billing.given(...funded(), autoReloadConfigured({ threshold: usd(999_999_999), amount: usd(20), monthlyCap: null }));
    old.when(triggerReload('r1', usd(19))).then(reloadTriggered('r1', usd(20), usd(19)));
    // After the reload the balance is at least the amount: no second charge.
    old.when(triggerReload('r1', usd(20))).thenNothing();
    expect(reloadBlocker(old.state, usd(20), NOW)).toBe('above_threshold');
  });

  test('nothing to top up before the first deposit', () => {
    const unfunded = billing.given(attached(), autoReloadConfigured({ threshold: usd(20), amount: usd(20), monthlyCap: null }));
    unfunded.when(triggerReload('r1', 0n, 'x')).thenNothing();
    expect(reloadBlocker(unfunded.state, 0n, 'x')).toBe('no_deposit');
  });

  test('the reload remembers the card on file when it was triggered (a retry sends the same charge)', () => {
    const st = billing.given(...configured(), reloadTriggered('r1', usd(20), 0n), attached('pm_card_amex')).state;
    expect(st.reloads.get('r1')!.paymentMethodId).toBe('pm_card_visa');
  });

  test('the monthly cap counts reloads triggered in the UTC month and not failed', () => {
    const march = '2026-03-31T23:59:00.000Z';
    const inMarch = scenario(billingDecider, (c: BillingCommand, s) => decide(c, s), { at: march });
    const cap = configured(usd(40));
    inMarch
      .given(...cap)
      .when(triggerReload('r1', 0n, march))
      .then(reloadTriggered('r1', usd(20), 0n));
    const one = [...cap, reloadTriggered('r1', usd(20), 0n), reloadSucceeded('r1', usd(20), 'pi_r1')];
    inMarch
      .given(...one)
      .when(triggerReload('r2', 0n, march))
      .then(reloadTriggered('r2', usd(20), 0n));
    const two = inMarch.given(...one, reloadTriggered('r2', usd(20), 0n), reloadSucceeded('r2', usd(20), 'pi_r2'));
    two.when(triggerReload('r3', 0n, march)).thenNothing();
    expect(reloadBlocker(two.state, 0n, march)).toBe('monthly_cap');
    two.when(triggerReload('r3', 0n, '2026-04-01T00:00:00.000Z')).then(reloadTriggered('r3', usd(20), 0n));
  });

  test('a reload settled twice: the first outcome wins; an unknown reload is not found', () => {
    const ok = billing.given(...configured(), reloadTriggered('r1', usd(20), 0n));
    ok.when(recordReloadOutcome('r1', { status: 'succeeded', paymentIntentId: 'pi_r1' })).then(reloadSucceeded('r1', usd(20), 'pi_r1'));
    ok.when(recordReloadOutcome('r9', { status: 'succeeded', paymentIntentId: 'pi_r9' })).thenFails('not_found', /r9/);
  });
});

describe('credit notes', () => {
  const issue = (creditNoteId: string, amount: bigint, requestCost = 1000n, reason = 'slow') =>
    ({
      type: 'IssueCreditNote',
      data: { workspaceId: 'w1', creditNoteId, requestId: 'r1', requestCost, amount, reason, by: 'operator' },
    }) as const;
  const stateAfter = (...cmds: BillingCommand[]) => cmds.reduce((s, c) => evolveDecided(s, decide(c, s), NOW), billingDecider.initial());

  test('up to the cost less earlier notes; the same id again is nothing, with another amount a conflict', () => {
    const s = stateAfter(issue('n1', 600n));
    expect(decide(issue('n1', 600n), s)).toEqual([]);
    expect(() => decide(issue('n1', 601n), s)).toThrow(expect.objectContaining({ code: 'conflict' }));
    expect(() => decide(issue('n2', 401n), s)).toThrow(expect.objectContaining({ code: 'invalid', field: 'amount' }));
    expect(decide(issue('n2', 400n), s)).toEqual([
      {
        type: 'CreditNoteIssued',
        data: { workspaceId: 'w1', creditNoteId: 'n2', requestId: 'r1', amountNanoUsd: '400', reason: 'slow', by: 'operator' },
      },
    ]);
    expect(() => decide(issue('n3', 0n), s)).toThrow(DomainError);
  });

  test('notes of another request do not count against this one', () => {
    const s = stateAfter({ ...issue('n1', 1000n), data: { ...issue('n1', 1000n).data, requestId: 'r2' } });
    expect(decide(issue('n2', 1000n), s)).toHaveLength(1);
  });
});
