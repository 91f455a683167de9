import { useRef, useState } from 'preact/hooks';
import { enc, post } from '../../api';
import type { DepositAnswer } from '../../api-types';
import { amountNano, checkDollars } from '../../amount';
import { Field } from '../../components/ui';
import { usd } from '../../format';
import { useWorkspace } from '../../state';
import { MAX_CHARGE_USD, useCardMessages, val, type CardProps } from './card-messages';
import { useAction } from '../../action';

export function Deposit({ billing, isAdmin, onChanged, actions }: CardProps) {
  const ws = useWorkspace();
  const first = !billing.funded;
  const min = billing.minimumDeposit;
  const [amount, setAmount] = useState(first ? min : '50');
  const [checked, setChecked] = useState(false);
  // After a deposit succeeds the button stays disarmed until the amount is edited: a second click
  // on the same form would otherwise be a new deposit (it has a fresh Idempotency-Key) and charge again.
  const [disarmed, setDisarmed] = useState(false);
  const msg = useCardMessages(actions);
  // One Idempotency-Key per intended deposit: a retry after a network error reuses it, so the
  // card is never charged twice; a successful deposit starts a new one.
  const idem = useRef(crypto.randomUUID());
  const lastAmount = useRef(amount);
  const check = checkDollars(amount, {
    cents: true,
    min,
    minMessage:
      amountNano(billing.deposited) === 0n ? `Your first deposit must be at least ${usd(min)}.` : `A deposit must be at least ${usd(min)}.`,
    max: MAX_CHARGE_USD,
    maxMessage: `One deposit can be at most ${usd(MAX_CHARGE_USD)}.`,
  });

  const { run: deposit, busy } = useAction(
    async (amount: string) => {
      const r = await post<DepositAnswer>(
        `/v1/workspaces/${enc(ws.workspaceId)}/billing/deposits`,
        { amount },
        { headers: { 'Idempotency-Key': idem.current } },
      );
      await onChanged();
      if (r.deposit.status === 'succeeded') {
        msg.setOutcome({ kind: 'success', text: `Deposit of ${usd(r.deposit.amount)} succeeded.` });
        idem.current = crypto.randomUUID();
        setDisarmed(true);
      } else {
        // 202: the provider did not answer in time; the same key settles it on retry.
        msg.setOutcome({ kind: 'info', text: ('detail' in r && r.detail) || 'The deposit is pending.' });
      }
    },
    {
      start: msg.start,
      fail: (err) => {
        msg.setError(err);
        // A declined card is a final answer: a new attempt is a new deposit.
        if ((err as { status?: number }).status && (err as { status: number }).status < 500) idem.current = crypto.randomUUID();
      },
    },
  );

  const submit = async (e: Event) => {
    e.preventDefault();
    setChecked(true);
    if (!check.ok) {
      msg.clear();
      return;
    }
    if (disarmed) return;
    if (lastAmount.current !== check.value) {
      idem.current = crypto.randomUUID();
      lastAmount.current = check.value;
    }
    await deposit(check.value);
  };
  return (
    <form class="card" onSubmit={submit} aria-labelledby="deposit-title" noValidate>
      <h2 id="deposit-title">Add credit</h2>
      {!isAdmin ? (
        <p class="muted">Only workspace admins can add credit.</p>
      ) : !billing.paymentMethod ? (
        <p class="muted">Add a payment method first.</p>
      ) : (
        <>
          <Field
            label="Deposit amount (USD)"
            hint={
              first
                ? `Deposits must reach ${usd(billing.initialDeposit)} before keys can be created; at least ${usd(min)} now.`
                : `At least ${usd(min)}.`
            }
            error={checked && !check.ok ? check.error : null}
          >
            {(p) => (
              <input
                {...p}
                name="depositAmount"
                inputMode="decimal"
                required
                value={amount}
                onInput={(e) => {
                  setAmount(val(e));
                  setDisarmed(false);
                  msg.clear();
                }}
              />
            )}
          </Field>
          <button type="submit" class="button button-primary" disabled={busy || disarmed}>
            {busy
              ? 'Charging…'
              : disarmed
                ? 'Deposited: edit the amount for another'
                : check.ok
                  ? `Deposit ${usd(check.value)}`
                  : 'Deposit'}
          </button>
        </>
      )}
      {msg.view}
    </form>
  );
}
