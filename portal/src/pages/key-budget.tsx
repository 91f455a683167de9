import { useEffect, useState } from 'preact/hooks';
import { enc, patch } from '../api';
import { amountNano, checkDollars } from '../amount';
import { Cents } from '../components/money';
import { Dialog, DialogActions, Field } from '../components/ui';
import { usd } from '../format';
import { KEY_NAME_MAX, KEY_NAME_MIN, type ApiKey } from '../resources';
import { useAction } from '../action';

/** The API's ceiling for a key budget. */
const MAX_BUDGET_USD = '1000000000';

export type BudgetPeriod = 'daily' | 'weekly' | 'monthly';
export const BUDGET_PERIODS: { value: BudgetPeriod; label: string; per: string }[] = [
  { value: 'daily', label: 'Daily (resets 00:00 UTC)', per: 'per day' },
  { value: 'weekly', label: 'Weekly (resets Monday 00:00 UTC)', per: 'per week' },
  { value: 'monthly', label: 'Monthly (resets on the 1st, 00:00 UTC)', per: 'per month' },
];
export const perPeriod = (p: BudgetPeriod | null | undefined) => BUDGET_PERIODS.find((x) => x.value === p)?.per ?? 'per month';

/** Spend against a budget with a meter, and when the period resets. */
export function BudgetMeter({
  spent,
  budget,
  period,
  resetsAt,
  what,
}: {
  spent: string;
  budget: string;
  period: BudgetPeriod;
  resetsAt: string | null;
  what: string;
}) {
  const b = amountNano(budget);
  const used = amountNano(spent);
  const pct = b === 0n ? 100 : Number((used * 1000n) / b) / 10;
  return (
    <span class="budget" title={resetsAt ? `Resets ${resetsAt.replace('T', ' ').slice(0, 16)} UTC` : undefined}>
      <Cents value={spent} /> of {usd(budget)} {perPeriod(period)}
      <span
        class={`meter${pct >= 100 ? ' meter-over' : ''}`}
        role="img"
        aria-label={`${Math.min(100, Math.round(pct))}% of the ${period} ${what} used`}
      >
        <span style={{ width: `${Math.min(100, pct)}%` }} />
      </span>
    </span>
  );
}

/** A key's spend in its budget's period (this month without a budget), with a meter when it has one. */
export function KeySpend({ k }: { k: ApiKey }) {
  if (!k.budget || !k.budgetPeriod) {
    return (
      <span class="budget">
        <Cents value={k.monthToDateSpend ?? '0'} /> spent this month · no budget
      </span>
    );
  }
  return <BudgetMeter spent={k.budgetSpent ?? '0'} budget={k.budget} period={k.budgetPeriod} resetsAt={k.budgetResetsAt} what="budget" />;
}

/** Rename a key and set or remove its budget and the period it resets by (PATCH …/keys/:keyId). */
export function KeyEditDialog({
  workspaceId,
  k,
  onClose,
  onSaved,
}: {
  workspaceId: string;
  k: ApiKey | null;
  onClose: () => void;
  onSaved: (message: string) => void;
}) {
  const [name, setName] = useState('');
  const [budget, setBudget] = useState('');
  const [period, setPeriod] = useState<BudgetPeriod>('monthly');
  const [checked, setChecked] = useState(false);
  useEffect(() => {
    setName(k?.name ?? '');
    setBudget(k?.budget ?? '');
    setPeriod(k?.budgetPeriod ?? 'monthly');
    setChecked(false);
    setError(null);
    // eslint-disable-next-line react-hooks/exhaustive-deps -- the form resets when another key is chosen, not when this one reloads
  }, [k?.keyId]);

  const n = name.trim();
  const nameError =
    n.length < KEY_NAME_MIN || n.length > KEY_NAME_MAX ? `A key name must be ${KEY_NAME_MIN} to ${KEY_NAME_MAX} characters long.` : null;
  const budgetCheck = budget.trim()
    ? checkDollars(budget, { max: MAX_BUDGET_USD, maxMessage: `A budget can be at most ${usd(MAX_BUDGET_USD)}.` })
    : null;

  type Body = { name?: string; budget?: string | null; budgetPeriod?: BudgetPeriod };
  const {
    run: patchKey,
    busy,
    error,
    setError,
  } = useAction(async (keyId: string, body: Body) => {
    const saved = await patch<ApiKey>(`/v1/workspaces/${enc(workspaceId)}/keys/${enc(keyId)}`, body);
    onSaved(
      body.budget === undefined && body.budgetPeriod === undefined
        ? `The key is now called “${n}”.`
        : !saved?.budget
          ? `The key “${n}” has no budget now.`
          : `The key “${n}” may spend ${usd(saved.budget)} ${perPeriod(saved.budgetPeriod)} (UTC); requests beyond it are refused with 402.`,
    );
  });

  const save = async (e: Event) => {
    e.preventDefault();
    if (!k) return;
    setChecked(true);
    if (nameError || (budgetCheck && !budgetCheck.ok)) return;
    const newBudget = budgetCheck?.ok ? budgetCheck.value : null;
    const body: Body = {};
    if (n !== k.name) body.name = n;
    if (
      (newBudget === null) !== (k.budget == null) ||
      (newBudget !== null && k.budget != null && amountNano(newBudget) !== amountNano(k.budget))
    ) {
      body.budget = newBudget;
    }
    if (newBudget !== null && period !== (k.budgetPeriod ?? 'monthly')) body.budgetPeriod = period;
    if (Object.keys(body).length === 0) {
      onClose();
      return;
    }
    await patchKey(k.keyId, body);
  };

  return (
    <Dialog open={k !== null} title="Edit key" onClose={onClose}>
      <form onSubmit={save} noValidate>
        <Field label="Key name" error={checked ? nameError : null}>
          {(p) => (
            <input
              {...p}
              name="editKeyName"
              maxLength={KEY_NAME_MAX}
              value={name}
              onInput={(e) => setName((e.target as HTMLInputElement).value)}
            />
          )}
        </Field>
        <Field
          label="Budget (USD)"
          hint={`Empty: no budget. Spent this month (UTC): ${usd(k?.monthToDateSpend ?? '0')}. 0 stops the key until you raise it.`}
          error={checked && budgetCheck && !budgetCheck.ok ? budgetCheck.error : null}
        >
          {(p) => (
            <input
              {...p}
              name="budget"
              inputMode="decimal"
              placeholder="no budget"
              value={budget}
              onInput={(e) => setBudget((e.target as HTMLInputElement).value)}
            />
          )}
        </Field>
        <PeriodSelect value={period} onChange={setPeriod} name="budgetPeriod" />
        <DialogActions error={error} onCancel={onClose} busy={busy} label="Save key" busyLabel="Saving…" />
      </form>
    </Dialog>
  );
}

/** The period a budget resets by. */
export function PeriodSelect({ value, onChange, name }: { value: BudgetPeriod; onChange: (p: BudgetPeriod) => void; name: string }) {
  return (
    <Field label="Resets" hint="Spend counts from the start of the period; in-flight requests count too.">
      {(p) => (
        <select {...p} name={name} value={value} onChange={(e) => onChange((e.target as HTMLSelectElement).value as BudgetPeriod)}>
          {BUDGET_PERIODS.map((o) => (
            <option key={o.value} value={o.value}>
              {o.label}
            </option>
          ))}
        </select>
      )}
    </Field>
  );
}
