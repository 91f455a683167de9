import { useEffect, useState } from 'preact/hooks';
import { enc, patch } from '../api';
import { amountNano, checkDollars } from '../amount';
import { Cents } from '../components/money';
import { Dialog, ErrorMessage, Field } from '../components/ui';
import { usd } from '../format';
import { KEY_NAME_MAX, KEY_NAME_MIN, type ApiKey } from '../resources';
import { useAction } from '../action';

/** The API's ceiling for a key budget. */
const MAX_BUDGET_USD = '1000000000';

/** A key's month-to-date spend, and its budget with a meter when it has one. */
export function KeySpend({ k }: { k: ApiKey }) {
  const spent = k.monthToDateSpend ?? '0';
  if (!k.monthlyBudget) {
    return (
      <span class="budget">
        <Cents value={spent} /> spent · no budget
      </span>
    );
  }
  const budget = amountNano(k.monthlyBudget);
  const used = amountNano(spent);
  const pct = budget === 0n ? 100 : Number((used * 1000n) / budget) / 10;
  return (
    <span class="budget">
      <Cents value={spent} /> of {usd(k.monthlyBudget)}
      <span class={`meter${pct >= 100 ? ' meter-over' : ''}`} role="img" aria-label={`${Math.min(100, Math.round(pct))}% of the monthly budget used`}>
        <span style={{ width: `${Math.min(100, pct)}%` }} />
      </span>
    </span>
  );
}

/** Rename a key and set or remove its monthly budget (PATCH …/keys/:keyId). */
export function KeyEditDialog({ workspaceId, k, onClose, onSaved }: { workspaceId: string; k: ApiKey | null; onClose: () => void; onSaved: (message: string) => void }) {
  const [name, setName] = useState('');
  const [budget, setBudget] = useState('');
  const [checked, setChecked] = useState(false);
  useEffect(() => {
    setName(k?.name ?? '');
    setBudget(k?.monthlyBudget ?? '');
    setChecked(false);
    setError(null);
  }, [k?.keyId]);

  const n = name.trim();
  const nameError = n.length < KEY_NAME_MIN || n.length > KEY_NAME_MAX ? `A key name must be ${KEY_NAME_MIN} to ${KEY_NAME_MAX} characters long.` : null;
  const budgetCheck = budget.trim() ? checkDollars(budget, { max: MAX_BUDGET_USD, maxMessage: `A budget can be at most ${usd(MAX_BUDGET_USD)}.` }) : null;

  const { run: patchKey, busy, error, setError } = useAction(async (keyId: string, body: { name?: string; monthlyBudget?: string | null }) => {
    await patch(`/v1/workspaces/${enc(workspaceId)}/keys/${enc(keyId)}`, body);
    onSaved(
      body.monthlyBudget === undefined
        ? `The key is now called “${n}”.`
        : body.monthlyBudget === null
          ? `The key “${n}” has no budget now.`
          : `The key “${n}” may spend ${usd(body.monthlyBudget)} per month (UTC); requests beyond it are refused with 402.`,
    );
  });

  const save = async (e: Event) => {
    e.preventDefault();
    if (!k) return;
    setChecked(true);
    if (nameError || (budgetCheck && !budgetCheck.ok)) return;
    const newBudget = budgetCheck?.ok ? budgetCheck.value : null;
    const body: { name?: string; monthlyBudget?: string | null } = {};
    if (n !== k.name) body.name = n;
    if ((newBudget === null) !== (k.monthlyBudget == null) || (newBudget !== null && k.monthlyBudget != null && amountNano(newBudget) !== amountNano(k.monthlyBudget))) {
      body.monthlyBudget = newBudget;
    }
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
          {(p) => <input {...p} name="editKeyName" maxLength={KEY_NAME_MAX} value={name} onInput={(e) => setName((e.target as HTMLInputElement).value)} />}
        </Field>
        <Field
          label="Monthly budget (USD)"
          hint={`Empty: no budget. Spent this month (UTC): ${usd(k?.monthToDateSpend ?? '0')}. 0 stops the key until you raise it.`}
          error={checked && budgetCheck && !budgetCheck.ok ? budgetCheck.error : null}
        >
          {(p) => <input {...p} name="monthlyBudget" inputMode="decimal" placeholder="no budget" value={budget} onInput={(e) => setBudget((e.target as HTMLInputElement).value)} />}
        </Field>
        <ErrorMessage error={error} />
        <div class="actions">
          <button type="button" class="button" onClick={onClose}>
            Cancel
          </button>
          <button type="submit" class="button button-primary" disabled={busy}>
            {busy ? 'Saving…' : 'Save key'}
          </button>
        </div>
      </form>
    </Dialog>
  );
}
