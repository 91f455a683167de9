import { useState } from 'preact/hooks';
import { enc, put } from '../../api';
import { amountNano, checkDollars, cents, formatUsd, parseUsd } from '../../amount';
import { ConfirmDialog, Field, Message } from '../../components/ui';
import { dateTime, usd } from '../../format';
import { useWorkspace } from '../../state';
import { MAX_CHARGE_USD, useCardMessages, val, type CardProps } from './card-messages';
import { useAction } from '../../action';

const AUTO_RELOAD_STATUS: Record<string, string> = {
  disabled: 'off',
  active: 'on',
  reloading: 'on — a reload is being charged',
  suspended: 'suspended',
};

/** The smallest auto-reload amount the API takes. */
const MIN_RELOAD_USD = '10';
/** Without a cap, the API caps a month at this many reloads. */
const DEFAULT_CAP_RELOADS = 5n;

export function AutoReload({ billing, isAdmin, onChanged, actions }: CardProps) {
  const ws = useWorkspace();
  const ar = billing.autoReload;
  const [enabled, setEnabled] = useState(ar?.enabled ?? false);
  const [threshold, setThreshold] = useState(ar?.threshold ?? '20');
  const [amount, setAmount] = useState(ar?.amount ?? '50');
  const [cap, setCap] = useState(ar?.monthlyCap ?? '');
  const [checked, setChecked] = useState(false);
  const [confirming, setConfirming] = useState(false);
  const msg = useCardMessages(actions);
  const amountCheck = checkDollars(amount, {
    cents: true,
    min: MIN_RELOAD_USD,
    minMessage: `The reload amount must be at least ${usd(MIN_RELOAD_USD)}.`,
    max: MAX_CHARGE_USD,
  });
  // One reload must lift the balance above the threshold, and a cap must allow one reload.
  const reload = amountCheck.ok ? amountCheck.value : undefined;
  const checks = {
    threshold: checkDollars(
      threshold,
      reload
        ? {
            max: reload,
            maxMessage: `The threshold can be at most the reload amount (${usd(reload)}), so that one reload lifts the balance above it.`,
          }
        : {},
    ),
    amount: amountCheck,
    cap: cap.trim()
      ? checkDollars(cap, {
          cents: true,
          ...(reload ? { min: reload, minMessage: `The monthly cap must be at least the reload amount (${usd(reload)}).` } : {}),
          max: MAX_CHARGE_USD,
        })
      : ({ ok: true, value: '' } as const),
  };
  const valid = checks.threshold.ok && checks.amount.ok && checks.cap.ok;
  const fieldError = (c: { ok: boolean; error?: string }) => (checked && !c.ok ? (c.error ?? null) : null);
  const edit = (set: (v: string) => void) => (e: Event) => {
    set(val(e));
    msg.clear();
  };

  const { run: saveSettings, busy } = useAction(
    async (body: { enabled: boolean; threshold: string; amount: string; monthlyCap: string | null }) => {
      await put(`/v1/workspaces/${enc(ws.workspaceId)}/billing/auto-reload`, body);
      await onChanged();
      msg.setOutcome({ kind: 'success', text: 'Auto-reload saved.' });
    },
    { start: msg.start, fail: msg.setError },
  );
  const save = async () => {
    if (!checks.threshold.ok || !checks.amount.ok || !checks.cap.ok) return;
    setConfirming(false);
    await saveSettings({
      enabled,
      threshold: checks.threshold.value,
      amount: checks.amount.value,
      monthlyCap: checks.cap.value ? checks.cap.value : null,
    });
  };
  // Saving a threshold above the balance charges the card at once: ask first.
  const chargesNow = enabled && checks.threshold.ok && amountNano(billing.balance) < parseUsd(checks.threshold.value);
  const submit = (e: Event) => {
    e.preventDefault();
    setChecked(true);
    if (!valid) {
      msg.clear();
      return;
    }
    if (chargesNow) setConfirming(true);
    else void save();
  };
  return (
    <form class="card" onSubmit={submit} aria-labelledby="ar-title" noValidate>
      <h2 id="ar-title">Auto-reload</h2>
      <p class="muted">When the balance falls below the threshold, the card on file is charged the reload amount.</p>
      {ar && (
        <p data-testid="auto-reload-status">
          Status: <strong>{AUTO_RELOAD_STATUS[ar.status] ?? ar.status}</strong>
          {ar.status !== 'disabled' && <> · reloaded this month: {usd(ar.reloadedThisMonth)}</>}
        </p>
      )}
      {ar?.status === 'suspended' && (
        <Message kind="warning">
          Auto-reload has been suspended{ar.suspendedAt ? ` since ${dateTime(ar.suspendedAt)}` : ''}. Update the payment method, then save
          this form to turn it back on.
        </Message>
      )}
      <fieldset disabled={!isAdmin}>
        <legend class="visually-hidden">Auto-reload settings</legend>
        <div class="checkbox">
          <input
            id="ar-enabled"
            type="checkbox"
            checked={enabled}
            onChange={(e) => {
              setEnabled((e.target as HTMLInputElement).checked);
              msg.clear();
            }}
          />
          <label for="ar-enabled">Reload automatically</label>
        </div>
        <div class="grid-2">
          <Field label="When the balance falls below (USD)" error={fieldError(checks.threshold)}>
            {(p) => <input {...p} name="threshold" inputMode="decimal" required value={threshold} onInput={edit(setThreshold)} />}
          </Field>
          <Field label="Add this amount (USD)" hint={`At least ${usd(MIN_RELOAD_USD)}.`} error={fieldError(checks.amount)}>
            {(p) => <input {...p} name="reloadAmount" inputMode="decimal" required value={amount} onInput={edit(setAmount)} />}
          </Field>
        </div>
        <Field
          label="Monthly cap (USD, optional)"
          hint={`The most auto-reload may charge in one calendar month (UTC). Empty: ${DEFAULT_CAP_RELOADS} reloads${reload ? ` (${usd(formatUsd(parseUsd(reload) * DEFAULT_CAP_RELOADS))})` : ''}.`}
          error={fieldError(checks.cap)}
        >
          {(p) => <input {...p} name="monthlyCap" inputMode="decimal" value={cap} onInput={edit(setCap)} />}
        </Field>
        {isAdmin && (
          <button type="submit" class="button" disabled={busy}>
            Save auto-reload
          </button>
        )}
      </fieldset>
      {!isAdmin && <p class="muted">Only workspace admins can change auto-reload.</p>}
      {msg.view}
      <ConfirmDialog
        open={confirming}
        title="Charge the card now?"
        confirmLabel={checks.amount.ok ? `Save and charge ${usd(checks.amount.value)}` : 'Save and charge'}
        onCancel={() => setConfirming(false)}
        onConfirm={() => void save()}
        busy={busy}
      >
        <p>
          The balance, <strong>{cents(billing.balance)}</strong>, is already below the new threshold of{' '}
          <strong>{checks.threshold.ok ? usd(checks.threshold.value) : threshold}</strong>. Saving turns auto-reload on and charges the card
          on file <strong>{checks.amount.ok ? usd(checks.amount.value) : amount}</strong> right away.
        </p>
      </ConfirmDialog>
    </form>
  );
}
