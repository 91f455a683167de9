import { useEffect, useState } from 'preact/hooks';
import { enc, put } from '../../api';
import { checkDollars } from '../../amount';
import type { Member } from '../../api-types';
import { Dialog, DialogActions, Field } from '../../components/ui';
import { usd } from '../../format';
import { useAction } from '../../action';
import { BudgetMeter, perPeriod, PeriodSelect, type BudgetPeriod } from '../key-budget';

/** The API's ceiling for a budget. */
const MAX_BUDGET_USD = '1000000000';

/** A member's budget across the keys they created, or "none". */
export function MemberBudget({ m }: { m: Member }) {
  if (!m.budget) return <span class="budget">no budget</span>;
  return (
    <BudgetMeter
      spent={m.budget.spent}
      budget={m.budget.budget}
      period={m.budget.period}
      resetsAt={m.budget.resetsAt}
      what="member budget"
    />
  );
}

/** Set or remove what a member's keys may spend together per period (PUT …/members/:userId/budget; admins). */
export function MemberBudgetDialog({
  workspaceId,
  m,
  onClose,
  onSaved,
}: {
  workspaceId: string;
  m: Member | null;
  onClose: () => void;
  onSaved: (message: string) => void;
}) {
  const [budget, setBudget] = useState('');
  const [period, setPeriod] = useState<BudgetPeriod>('monthly');
  const [checked, setChecked] = useState(false);
  useEffect(() => {
    setBudget(m?.budget?.budget ?? '');
    setPeriod(m?.budget?.period ?? 'monthly');
    setChecked(false);
    setError(null);
    // eslint-disable-next-line react-hooks/exhaustive-deps -- the form resets when another member is chosen, not when this one reloads
  }, [m?.userId]);
  const who = m?.name ?? m?.email ?? 'this member';
  const budgetCheck = budget.trim()
    ? checkDollars(budget, { max: MAX_BUDGET_USD, maxMessage: `A budget can be at most ${usd(MAX_BUDGET_USD)}.` })
    : null;

  const {
    run: save,
    busy,
    error,
    setError,
  } = useAction(async (userId: string, body: { budget: string | null; period?: BudgetPeriod }) => {
    await put(`/v1/workspaces/${enc(workspaceId)}/members/${enc(userId)}/budget`, body);
    onSaved(
      body.budget === null
        ? `${who} has no member budget now.`
        : `The keys ${who} created may spend ${usd(body.budget)} ${perPeriod(body.period)} together (UTC); requests beyond it are refused with 402.`,
    );
  });

  const submit = async (e: Event) => {
    e.preventDefault();
    if (!m) return;
    setChecked(true);
    if (budgetCheck && !budgetCheck.ok) return;
    await save(m.userId, budgetCheck?.ok ? { budget: budgetCheck.value, period } : { budget: null });
  };

  return (
    <Dialog open={m !== null} title={`Budget for ${who}`} onClose={onClose}>
      <form onSubmit={submit} noValidate>
        <Field
          label="Member budget (USD)"
          hint="Counts every key this member created in this workspace. Empty: no member budget. 0 stops their keys."
          error={checked && budgetCheck && !budgetCheck.ok ? budgetCheck.error : null}
        >
          {(p) => (
            <input
              {...p}
              name="memberBudget"
              inputMode="decimal"
              placeholder="no budget"
              value={budget}
              onInput={(e) => setBudget((e.target as HTMLInputElement).value)}
            />
          )}
        </Field>
        <PeriodSelect value={period} onChange={setPeriod} name="memberBudgetPeriod" />
        <DialogActions error={error} onCancel={onClose} busy={busy} label="Save budget" busyLabel="Saving…" />
      </form>
    </Dialog>
  );
}
