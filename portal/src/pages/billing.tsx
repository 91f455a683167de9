import { useEffect, useRef, useState } from 'preact/hooks';
import { enc, get, post, put } from '../api';
import { checkDollars, cents } from '../amount';
import { Cents } from '../components/money';
import { ConfirmDialog, ErrorMessage, Field, Loading, Message, useLoad } from '../components/ui';
import { dateTime, fromNano, integer, toNano, usd } from '../format';
import { listKeys, type ApiKey } from '../resources';
import { useSession, useWorkspace } from '../state';

/** GET /v1/workspaces/:ws/billing (docs/BILLING.md). Amounts are USD decimal strings. */
export interface Billing {
  mode: 'stripe' | 'sandbox';
  modeNote?: string;
  balance: string;
  reserved: string;
  available: string;
  deposited: string;
  spent: string;
  funded: boolean;
  initialDeposit: string;
  minimumDeposit: string;
  paymentMethod: { id: string; brand: string; last4: string } | null;
  autoReload: {
    enabled: boolean;
    threshold: string;
    amount: string;
    monthlyCap: string | null;
    status: 'disabled' | 'active' | 'reloading' | 'suspended';
    suspendedReason: string | null;
    suspendedAt: string | null;
    reloadedThisMonth: string;
  } | null;
}

interface LedgerEntry {
  position: string;
  at: string;
  type: 'DepositSucceeded' | 'AutoReloadSucceeded' | 'TokensDebited' | string;
  ref: string;
  amount: string;
  balance: string;
  keyId?: string;
  model?: string;
  inputTokens?: number;
  outputTokens?: number;
}

interface LedgerPage {
  entries: LedgerEntry[];
  total: number;
  nextCursor: string | null;
}

const val = (e: Event) => (e.target as HTMLInputElement).value;

export const loadBilling = (ws: string, signal?: AbortSignal) => get<Billing>(`/v1/workspaces/${enc(ws)}/billing`, { signal });

export function BillingPage() {
  const ws = useWorkspace();
  const { me, refresh } = useSession();
  const isAdmin = ws.role === 'admin';
  const billing = useLoad((signal) => loadBilling(ws.workspaceId, signal), [ws.workspaceId]);
  // Notices (a suspended auto-reload, …) live in /v1/me: read them afresh with the page.
  useEffect(() => {
    void refresh();
  }, [refresh]);
  const [ledgerTick, setLedgerTick] = useState(0);
  const changed = async () => {
    await billing.reload();
    setLedgerTick((t) => t + 1);
    void refresh();
  };
  // Each action clears the messages the other cards still show from before.
  const [actionSeq, setActionSeq] = useState(0);
  const seqRef = useRef(0);
  const actions: Actions = { seq: actionSeq, begin: () => (setActionSeq(++seqRef.current), seqRef.current) };
  const b = billing.data;
  const notices = (me?.notices ?? []).filter((n) => n.workspaceId === ws.workspaceId);

  return (
    <section aria-labelledby="billing-title">
      <h1 id="billing-title">Billing</h1>
      <p class="lede">
        Prepaid credit for the workspace <strong>{ws.name}</strong>. Requests are billed per token from this balance.
      </p>
      {notices.map((n) => (
        <Message key={n.id} kind="warning">
          <span data-testid="notice">{n.message}</span>
        </Message>
      ))}
      {billing.loading && !b ? (
        <Loading what="Loading billing" />
      ) : billing.error ? (
        <ErrorMessage error={billing.error} />
      ) : b ? (
        <>
          <div class="stats" aria-label="Balance">
            <div class="stat">
              <p class="stat-label">Balance</p>
              <p class="stat-value" data-testid="balance">
                <Cents value={b.balance} />
              </p>
            </div>
            <div class="stat">
              <p class="stat-label">Available (less requests in flight)</p>
              <p class="stat-value">
                <Cents value={b.available} />
              </p>
            </div>
            <div class="stat">
              <p class="stat-label">Spent on requests</p>
              <p class="stat-value">
                <Cents value={b.spent} />
              </p>
            </div>
            <div class="stat">
              <p class="stat-label">Status</p>
              <p class="stat-value">{b.funded ? 'Funded' : 'Not funded'}</p>
            </div>
          </div>
          {!b.funded && (
            <Message kind="info">
              {isAdmin
                ? `To create API keys, add a payment method and deposit at least ${usd(b.initialDeposit)} in total (deposited so far: ${usd(b.deposited)}).`
                : `This workspace is not funded yet: an admin of ${ws.name} must add a payment method and deposit at least ${usd(b.initialDeposit)} before keys can be created.`}
            </Message>
          )}
          <div class="grid-2 cards billing-cards">
            <PaymentMethod billing={b} isAdmin={isAdmin} onChanged={changed} actions={actions} />
            <Deposit billing={b} isAdmin={isAdmin} onChanged={changed} actions={actions} />
          </div>
          <AutoReload billing={b} isAdmin={isAdmin} onChanged={changed} actions={actions} />
          <Ledger tick={ledgerTick} />
        </>
      ) : null}
    </section>
  );
}

/** The page's action counter: a card starting an action clears the other cards' old messages. */
interface Actions {
  seq: number;
  begin(): number;
}

type Outcome = { kind: 'success' | 'warning' | 'info'; text: string } | null;

function useCardMessages(actions: Actions) {
  const mine = useRef(-1);
  const [error, setError] = useState<unknown>(null);
  const [outcome, setOutcome] = useState<Outcome>(null);
  useEffect(() => {
    if (actions.seq !== mine.current) {
      setError(null);
      setOutcome(null);
    }
  }, [actions.seq]);
  return {
    error,
    outcome,
    setError,
    setOutcome,
    start() {
      mine.current = actions.begin();
      setError(null);
      setOutcome(null);
    },
    clear() {
      setError(null);
      setOutcome(null);
    },
    view: (
      <>
        <ErrorMessage error={error} />
        {outcome && <Message kind={outcome.kind}>{outcome.text}</Message>}
      </>
    ),
  };
}

function PaymentMethod({ billing, isAdmin, onChanged, actions }: { billing: Billing; isAdmin: boolean; onChanged: () => Promise<void>; actions: Actions }) {
  const ws = useWorkspace();
  const { config } = useSession();
  const cards = config?.testCards ?? [];
  // The card on file, when it is one of the test cards (the sandbox keeps Stripe's test ids).
  const [choice, setChoice] = useState(() =>
    billing.paymentMethod && cards.some((c) => c.paymentMethodId === billing.paymentMethod!.id) ? billing.paymentMethod.id : 'pm_card_visa',
  );
  const msg = useCardMessages(actions);
  const [busy, setBusy] = useState(false);
  const pm = billing.paymentMethod;

  const attach = async (paymentMethodId: string) => {
    setBusy(true);
    msg.start();
    try {
      await post(`/v1/workspaces/${enc(ws.workspaceId)}/billing/payment-method`, { paymentMethodId });
      await onChanged();
      // A test card that declines is on file, but no charge with it will go through: say so, not "saved" in green.
      const behaviour = cards.find((c) => c.paymentMethodId === paymentMethodId)?.behaviour;
      msg.setOutcome(savedCardOutcome(behaviour));
    } catch (err) {
      msg.setError(err);
    } finally {
      setBusy(false);
    }
  };

  const stripeKey = config?.stripePublishableKey ?? null;
  return (
    <div class="card" aria-labelledby="pm-title">
      <h2 id="pm-title">Payment method</h2>
      <p data-testid="payment-method">
        {pm ? (
          <>
            On file: <strong>{cap(pm.brand)}</strong> ending in <strong>{pm.last4}</strong>
            {billing.mode === 'sandbox' && (
              <>
                {' '}
                <span class="sandbox-label">sandbox</span>
              </>
            )}
          </>
        ) : (
          'No payment method yet.'
        )}
      </p>
      {!isAdmin ? (
        <p class="muted">Only workspace admins can change the payment method.</p>
      ) : stripeKey ? (
        <StripeCard publishableKey={stripeKey} busy={busy} onPaymentMethod={attach} />
      ) : cards.length ? (
        <form
          onSubmit={(e) => {
            e.preventDefault();
            void attach(choice);
          }}
        >
          <fieldset>
            <legend>
              <span class="sandbox-label">Sandbox</span> Test cards — no real card is charged
            </legend>
            <p class="hint">
              {billing.mode === 'sandbox'
                ? 'This service runs the sandbox payment gateway (no Stripe account is configured): no card is charged. Each test card behaves like its Stripe namesake.'
                : 'Stripe test mode without a publishable key: pick one of Stripe’s test payment methods.'}
            </p>
            {cards.map((c) => (
              <div class="radio" key={c.paymentMethodId}>
                <input
                  type="radio"
                  name="testCard"
                  id={`card-${c.paymentMethodId}`}
                  value={c.paymentMethodId}
                  checked={choice === c.paymentMethodId}
                  onChange={() => setChoice(c.paymentMethodId)}
                />
                <label for={`card-${c.paymentMethodId}`}>
                  {cap(c.brand)} •••• {c.last4} — {behaviourText(c.behaviour)}
                </label>
              </div>
            ))}
          </fieldset>
          <button type="submit" class="button button-primary" disabled={busy}>
            {pm ? 'Replace payment method' : 'Save payment method'}
          </button>
        </form>
      ) : (
        <p class="muted">No payment form is configured: set STRIPE_PUBLISHABLE_KEY to use Stripe Elements.</p>
      )}
      {msg.view}
    </div>
  );
}

function savedCardOutcome(behaviour: string | undefined): Outcome {
  if (behaviour === 'declines' || behaviour === 'insufficient_funds') {
    return { kind: 'warning', text: `Card saved, but it will not pay (${behaviourText(behaviour)}): deposits and auto-reload with it will fail. Choose a card that charges.` };
  }
  if (behaviour === 'requires_authentication') {
    return { kind: 'warning', text: 'Card saved. It needs 3-D Secure authentication, so auto-reload, which charges with nobody present, will fail with it.' };
  }
  return { kind: 'success', text: 'Payment method saved.' };
}

const cap = (s: string) => (s ? s[0].toUpperCase() + s.slice(1) : s);

function behaviourText(b: string): string {
  switch (b) {
    case 'succeeds':
      return 'charges succeed';
    case 'declines':
      return 'declined';
    case 'insufficient_funds':
      return 'declined: insufficient funds';
    case 'requires_authentication':
      return 'needs 3-D Secure authentication (auto-reload fails)';
    default:
      return b;
  }
}

declare global {
  interface Window {
    Stripe?: (key: string) => StripeJs;
  }
}
interface StripeJs {
  elements(): { create(type: 'card', opts?: unknown): StripeCardElement };
  createPaymentMethod(opts: { type: 'card'; card: StripeCardElement }): Promise<{ paymentMethod?: { id: string }; error?: { message?: string } }>;
}
interface StripeCardElement {
  mount(el: HTMLElement): void;
  destroy(): void;
  on(event: 'change', fn: (e: { error?: { message?: string } }) => void): void;
}

let stripeScript: Promise<void> | null = null;
function loadStripeJs(): Promise<void> {
  stripeScript ??= new Promise<void>((resolve, reject) => {
    const s = document.createElement('script');
    s.src = 'https://js.stripe.com/v3/';
    s.async = true;
    s.onload = () => resolve();
    s.onerror = () => reject(new Error('Stripe.js could not be loaded'));
    document.head.appendChild(s);
  });
  return stripeScript;
}

/** Stripe Elements' card field: the card number never touches this service, only a pm_… id does. */
function StripeCard({ publishableKey, busy, onPaymentMethod }: { publishableKey: string; busy: boolean; onPaymentMethod: (id: string) => Promise<void> }) {
  const mountRef = useRef<HTMLDivElement>(null);
  const stripe = useRef<StripeJs | null>(null);
  const card = useRef<StripeCardElement | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [ready, setReady] = useState(false);
  useEffect(() => {
    let cancelled = false;
    loadStripeJs().then(
      () => {
        if (cancelled || !window.Stripe || !mountRef.current) return;
        stripe.current = window.Stripe(publishableKey);
        card.current = stripe.current.elements().create('card', { hidePostalCode: true });
        card.current.mount(mountRef.current);
        card.current.on('change', (e) => setError(e.error?.message ?? null));
        setReady(true);
      },
      (e: Error) => !cancelled && setError(e.message),
    );
    return () => {
      cancelled = true;
      card.current?.destroy();
    };
  }, [publishableKey]);
  const submit = async (e: Event) => {
    e.preventDefault();
    if (!stripe.current || !card.current) return;
    const r = await stripe.current.createPaymentMethod({ type: 'card', card: card.current });
    if (r.error || !r.paymentMethod) {
      setError(r.error?.message ?? 'The card was not accepted');
      return;
    }
    await onPaymentMethod(r.paymentMethod.id);
  };
  return (
    <form onSubmit={submit}>
      <label id="card-label">Card</label>
      <div ref={mountRef} class="stripe-card" aria-labelledby="card-label" />
      {error && <p class="field-error">{error}</p>}
      <div class="actions">
        <button type="submit" class="button button-primary" disabled={!ready || busy}>
          Save card
        </button>
      </div>
    </form>
  );
}

/** The most one charge may be (the API's limit). */
const MAX_CHARGE_USD = '999999.99';

function Deposit({ billing, isAdmin, onChanged, actions }: { billing: Billing; isAdmin: boolean; onChanged: () => Promise<void>; actions: Actions }) {
  const ws = useWorkspace();
  const first = !billing.funded;
  const min = billing.minimumDeposit;
  const [amount, setAmount] = useState(first ? min : '50');
  const [checked, setChecked] = useState(false);
  const msg = useCardMessages(actions);
  const [busy, setBusy] = useState(false);
  // One Idempotency-Key per intended deposit: a retry after a network error reuses it, so the
  // card is never charged twice; a successful deposit starts a new one.
  const idem = useRef(crypto.randomUUID());
  const lastAmount = useRef(amount);
  const check = checkDollars(amount, {
    cents: true,
    min,
    minMessage: toNano(billing.deposited) === 0n ? `Your first deposit must be at least ${usd(min)}.` : `A deposit must be at least ${usd(min)}.`,
    max: MAX_CHARGE_USD,
    maxMessage: `One deposit can be at most ${usd(MAX_CHARGE_USD)}.`,
  });

  const submit = async (e: Event) => {
    e.preventDefault();
    setChecked(true);
    if (!check.ok) {
      msg.clear();
      return;
    }
    if (lastAmount.current !== check.value) {
      idem.current = crypto.randomUUID();
      lastAmount.current = check.value;
    }
    setBusy(true);
    msg.start();
    try {
      const r = await post<{ deposit: { status: string; amount: string }; detail?: string }>(
        `/v1/workspaces/${enc(ws.workspaceId)}/billing/deposits`,
        { amount: check.value },
        { headers: { 'Idempotency-Key': idem.current } },
      );
      await onChanged();
      if (r.deposit.status === 'succeeded') {
        msg.setOutcome({ kind: 'success', text: `Deposit of ${usd(r.deposit.amount)} succeeded.` });
        idem.current = crypto.randomUUID();
      } else {
        // 202: the provider did not answer in time; the same key settles it on retry.
        msg.setOutcome({ kind: 'info', text: r.detail ?? 'The deposit is pending.' });
      }
    } catch (err) {
      msg.setError(err);
      // A declined card is a final answer: a new attempt is a new deposit.
      if ((err as { status?: number }).status && (err as { status: number }).status < 500) idem.current = crypto.randomUUID();
    } finally {
      setBusy(false);
    }
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
            hint={first ? `Deposits must reach ${usd(billing.initialDeposit)} before keys can be created; at least ${usd(min)} now.` : `At least ${usd(min)}.`}
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
                  msg.clear();
                }}
              />
            )}
          </Field>
          <button type="submit" class="button button-primary" disabled={busy}>
            {busy ? 'Charging…' : check.ok ? `Deposit ${usd(check.value)}` : 'Deposit'}
          </button>
        </>
      )}
      {msg.view}
    </form>
  );
}

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

function AutoReload({ billing, isAdmin, onChanged, actions }: { billing: Billing; isAdmin: boolean; onChanged: () => Promise<void>; actions: Actions }) {
  const ws = useWorkspace();
  const ar = billing.autoReload;
  const [enabled, setEnabled] = useState(ar?.enabled ?? false);
  const [threshold, setThreshold] = useState(ar?.threshold ?? '20');
  const [amount, setAmount] = useState(ar?.amount ?? '50');
  const [cap, setCap] = useState(ar?.monthlyCap ?? '');
  const [checked, setChecked] = useState(false);
  const [confirming, setConfirming] = useState(false);
  const msg = useCardMessages(actions);
  const [busy, setBusy] = useState(false);
  const amountCheck = checkDollars(amount, { cents: true, min: MIN_RELOAD_USD, minMessage: `The reload amount must be at least ${usd(MIN_RELOAD_USD)}.`, max: MAX_CHARGE_USD });
  // One reload must lift the balance above the threshold, and a cap must allow one reload.
  const reload = amountCheck.ok ? amountCheck.value : undefined;
  const checks = {
    threshold: checkDollars(threshold, reload ? { max: reload, maxMessage: `The threshold can be at most the reload amount (${usd(reload)}), so that one reload lifts the balance above it.` } : {}),
    amount: amountCheck,
    cap: cap.trim()
      ? checkDollars(cap, { cents: true, ...(reload ? { min: reload, minMessage: `The monthly cap must be at least the reload amount (${usd(reload)}).` } : {}), max: MAX_CHARGE_USD })
      : ({ ok: true, value: '' } as const),
  };
  const valid = checks.threshold.ok && checks.amount.ok && checks.cap.ok;
  const fieldError = (c: { ok: boolean; error?: string }) => (checked && !c.ok ? (c.error ?? null) : null);
  const edit = (set: (v: string) => void) => (e: Event) => {
    set(val(e));
    msg.clear();
  };

  const save = async () => {
    if (!checks.threshold.ok || !checks.amount.ok || !checks.cap.ok) return;
    setConfirming(false);
    setBusy(true);
    msg.start();
    try {
      await put(`/v1/workspaces/${enc(ws.workspaceId)}/billing/auto-reload`, {
        enabled,
        threshold: checks.threshold.value,
        amount: checks.amount.value,
        monthlyCap: checks.cap.value ? checks.cap.value : null,
      });
      await onChanged();
      msg.setOutcome({ kind: 'success', text: 'Auto-reload saved.' });
    } catch (err) {
      msg.setError(err);
    } finally {
      setBusy(false);
    }
  };
  // Saving a threshold above the balance charges the card at once: ask first.
  const chargesNow = enabled && checks.threshold.ok && toNano(billing.balance) < toNano(checks.threshold.value);
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
          Auto-reload has been suspended{ar.suspendedAt ? ` since ${dateTime(ar.suspendedAt)}` : ''}. Update the payment method, then save this form to turn it back on.
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
          hint={`The most auto-reload may charge in one calendar month (UTC). Empty: ${DEFAULT_CAP_RELOADS} reloads${reload ? ` (${usd(fromNano(toNano(reload) * DEFAULT_CAP_RELOADS))})` : ''}.`}
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
          <strong>{checks.threshold.ok ? usd(checks.threshold.value) : threshold}</strong>. Saving turns auto-reload on and charges the card on file{' '}
          <strong>{checks.amount.ok ? usd(checks.amount.value) : amount}</strong> right away.
        </p>
      </ConfirmDialog>
    </form>
  );
}

const LEDGER_PAGE = 50;

/** The ledger, newest first: the API pages oldest first, so the portal reads from the end. */
function Ledger({ tick }: { tick: number }) {
  const ws = useWorkspace();
  const [pages, setPages] = useState(1);
  const keys = useLoad((signal) => listKeys(ws.workspaceId, signal).catch(() => [] as ApiKey[]), [ws.workspaceId, tick]);
  const ledger = useLoad(
    async (signal) => {
      const base = `/v1/workspaces/${enc(ws.workspaceId)}/billing/ledger`;
      const head = await get<LedgerPage>(`${base}?limit=1`, { signal });
      const want = LEDGER_PAGE * pages;
      const from = Math.max(0, head.total - want);
      const rows: LedgerEntry[] = [];
      let cursor: string | null = String(from);
      while (cursor !== null && rows.length < want) {
        const page: LedgerPage = await get<LedgerPage>(`${base}?limit=${Math.min(500, want - rows.length)}&cursor=${cursor}`, { signal });
        rows.push(...page.entries);
        cursor = page.nextCursor;
      }
      return { rows: rows.reverse(), total: head.total, more: from > 0 };
    },
    [ws.workspaceId, tick, pages],
  );
  const keyName = new Map((keys.data ?? []).map((k) => [k.keyId, k.name]));
  const describe = (r: LedgerEntry) => {
    switch (r.type) {
      case 'DepositSucceeded':
        return 'Deposit';
      case 'AutoReloadSucceeded':
        return 'Auto-reload';
      case 'TokensDebited':
        return `Request · ${r.model ?? ''} · ${integer(r.inputTokens ?? 0)} in / ${integer(r.outputTokens ?? 0)} out · key ${
          (r.keyId && keyName.get(r.keyId)) ?? 'deleted'
        }`;
      default:
        return r.type;
    }
  };
  const data = ledger.data;
  return (
    <div class="card">
      <h2>Ledger</h2>
      {ledger.loading && !data ? (
        <Loading what="Loading the ledger" />
      ) : ledger.error ? (
        <ErrorMessage error={ledger.error} />
      ) : !data || data.rows.length === 0 ? (
        <p class="muted">No money has moved yet.</p>
      ) : (
        <>
          <p class="muted">
            {data.total} {data.total === 1 ? 'entry' : 'entries'}, newest first.
          </p>
          <div class="table-wrap">
            <table class="table table-stack" aria-label="Ledger, newest first">
              <thead>
                <tr>
                  <th scope="col">When</th>
                  <th scope="col">Entry</th>
                  <th scope="col" class="num">
                    Amount
                  </th>
                  <th scope="col" class="num">
                    Balance after
                  </th>
                </tr>
              </thead>
              <tbody>
                {data.rows.map((r) => (
                  <tr key={r.position} data-testid="ledger-row">
                    <td>{dateTime(r.at)}</td>
                    <td data-label="Entry">{describe(r)}</td>
                    <td class="num" data-label="Amount">
                      {usd(r.amount, { maxDecimals: 9 })}
                    </td>
                    <td class="num" data-label="Balance after">
                      {usd(r.balance, { maxDecimals: 9 })}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          {data.more && (
            <div class="actions">
              <button type="button" class="button" onClick={() => setPages((p) => p + 1)}>
                Show older entries
              </button>
            </div>
          )}
        </>
      )}
    </div>
  );
}
