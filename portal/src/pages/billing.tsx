import { useEffect, useRef, useState } from 'preact/hooks';
import { enc, get, post, put } from '../api';
import { ErrorMessage, Field, Loading, Message, useLoad } from '../components/ui';
import { dateTime, usd } from '../format';
import { useSession, useWorkspace } from '../state';

export interface Billing {
  balance: string;
  available?: string;
  reserved?: string;
  funded: boolean;
  requiredDeposit?: string;
  paymentMethod: { brand: string; last4: string; gateway?: string; paymentMethodId?: string } | null;
  autoReload: { enabled: boolean; threshold: string; amount: string; monthlyCap?: string | null; suspended?: boolean; suspendedReason?: string | null } | null;
  notices?: { id?: string; kind?: string; message: string }[];
}

interface LedgerEntry {
  id?: string;
  type: string;
  amount: string;
  balanceAfter?: string;
  created: string;
  description?: string;
  reason?: string;
}

const val = (e: Event) => (e.target as HTMLInputElement).value;

export const loadBilling = (ws: string, signal?: AbortSignal) => get<Billing>(`/v1/workspaces/${enc(ws)}/billing`, { signal });

export function BillingPage() {
  const ws = useWorkspace();
  const { me } = useSession();
  const isAdmin = ws.role === 'admin';
  const billing = useLoad((signal) => loadBilling(ws.workspaceId, signal), [ws.workspaceId]);
  const [ledgerTick, setLedgerTick] = useState(0);
  const changed = async () => {
    await billing.reload();
    setLedgerTick((t) => t + 1);
  };
  const b = billing.data;
  const notices = [
    ...(b?.notices ?? []),
    ...(me?.notices ?? []).filter((n) => !n.workspaceId || n.workspaceId === ws.workspaceId),
  ].filter((n, i, all) => all.findIndex((m) => m.message === n.message) === i);

  return (
    <section aria-labelledby="billing-title">
      <h1 id="billing-title">Billing</h1>
      <p class="lede">
        Prepaid credit for the workspace <strong>{ws.name}</strong>. Requests are billed per token from this balance.
      </p>
      {notices.map((n) => (
        <Message key={n.message} kind="warning">
          {n.message}
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
                {usd(b.balance)}
              </p>
            </div>
            {b.available !== undefined && (
              <div class="stat">
                <p class="stat-label">Available (less requests in flight)</p>
                <p class="stat-value">{usd(b.available)}</p>
              </div>
            )}
            <div class="stat">
              <p class="stat-label">Status</p>
              <p class="stat-value">{b.funded ? 'Funded' : 'Not funded'}</p>
            </div>
          </div>
          {!b.funded && (
            <Message kind="info">
              To create API keys, add a payment method and make a first deposit of at least {usd(b.requiredDeposit ?? '100')}.
            </Message>
          )}
          <div class="grid-2 cards billing-cards">
            <PaymentMethod billing={b} isAdmin={isAdmin} onChanged={changed} />
            <Deposit billing={b} isAdmin={isAdmin} onChanged={changed} />
          </div>
          <AutoReload billing={b} isAdmin={isAdmin} onChanged={changed} />
          <Ledger tick={ledgerTick} />
        </>
      ) : null}
    </section>
  );
}

function PaymentMethod({ billing, isAdmin, onChanged }: { billing: Billing; isAdmin: boolean; onChanged: () => Promise<void> }) {
  const ws = useWorkspace();
  const { config } = useSession();
  const [choice, setChoice] = useState('pm_card_visa');
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const [done, setDone] = useState<string | null>(null);
  const pm = billing.paymentMethod;

  const attach = async (paymentMethodId: string) => {
    setBusy(true);
    setError(null);
    setDone(null);
    try {
      await post(`/v1/workspaces/${enc(ws.workspaceId)}/billing/payment-method`, { paymentMethodId });
      setDone('Payment method saved.');
      await onChanged();
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };

  const stripeKey = config?.stripePublishableKey ?? null;
  const cards = config?.testCards ?? [];
  return (
    <div class="card" aria-labelledby="pm-title">
      <h2 id="pm-title">Payment method</h2>
      <p data-testid="payment-method">
        {pm ? (
          <>
            On file: <strong>{cap(pm.brand)}</strong> ending in <strong>{pm.last4}</strong>
            {pm.gateway === 'sandbox' && (
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
              {config?.gateway === 'sandbox'
                ? 'This service runs the sandbox payment gateway (no Stripe account is configured). Each test card behaves like its Stripe namesake.'
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
      <ErrorMessage error={error} />
      {done && <Message kind="success">{done}</Message>}
    </div>
  );
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

function Deposit({ billing, isAdmin, onChanged }: { billing: Billing; isAdmin: boolean; onChanged: () => Promise<void> }) {
  const ws = useWorkspace();
  const { config } = useSession();
  const first = !billing.funded;
  const min = first ? (billing.requiredDeposit ?? config?.initialDepositUsd ?? '100') : (config?.minDepositUsd ?? '10');
  const [amount, setAmount] = useState(first ? min : '50');
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const [done, setDone] = useState<string | null>(null);
  // One Idempotency-Key per intended deposit: a retry after a network error reuses it, so the
  // card is never charged twice; a successful deposit starts a new one.
  const idem = useRef(crypto.randomUUID());
  const lastAmount = useRef(amount);

  const submit = async (e: Event) => {
    e.preventDefault();
    if (lastAmount.current !== amount) {
      idem.current = crypto.randomUUID();
      lastAmount.current = amount;
    }
    setBusy(true);
    setError(null);
    setDone(null);
    try {
      await post(`/v1/workspaces/${enc(ws.workspaceId)}/billing/deposits`, { amount: amount.trim() }, { headers: { 'Idempotency-Key': idem.current } });
      setDone(`Deposit of ${usd(amount)} succeeded.`);
      idem.current = crypto.randomUUID();
      await onChanged();
    } catch (err) {
      setError(err);
      // A declined card is a final answer: a new attempt is a new deposit.
      if ((err as { status?: number }).status && (err as { status: number }).status < 500) idem.current = crypto.randomUUID();
    } finally {
      setBusy(false);
    }
  };
  return (
    <form class="card" onSubmit={submit} aria-labelledby="deposit-title">
      <h2 id="deposit-title">Add credit</h2>
      {!isAdmin ? (
        <p class="muted">Only workspace admins can add credit.</p>
      ) : !billing.paymentMethod ? (
        <p class="muted">Add a payment method first.</p>
      ) : (
        <>
          <Field label="Amount (USD)" hint={first ? `The first deposit must be at least ${usd(min)}.` : `At least ${usd(min)}.`}>
            {(p) => <input {...p} name="depositAmount" inputMode="decimal" required value={amount} onInput={(e) => setAmount(val(e))} />}
          </Field>
          <button type="submit" class="button button-primary" disabled={busy}>
            {busy ? 'Charging…' : `Deposit ${usd(amount || '0')}`}
          </button>
        </>
      )}
      <ErrorMessage error={error} />
      {done && <Message kind="success">{done}</Message>}
    </form>
  );
}

function AutoReload({ billing, isAdmin, onChanged }: { billing: Billing; isAdmin: boolean; onChanged: () => Promise<void> }) {
  const ws = useWorkspace();
  const ar = billing.autoReload;
  const [enabled, setEnabled] = useState(ar?.enabled ?? false);
  const [threshold, setThreshold] = useState(ar?.threshold ?? '20');
  const [amount, setAmount] = useState(ar?.amount ?? '50');
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const [done, setDone] = useState(false);
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    setDone(false);
    try {
      await put(`/v1/workspaces/${enc(ws.workspaceId)}/billing/auto-reload`, { enabled, threshold: threshold.trim(), amount: amount.trim() });
      setDone(true);
      await onChanged();
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  return (
    <form class="card" onSubmit={submit} aria-labelledby="ar-title">
      <h2 id="ar-title">Auto-reload</h2>
      <p class="muted">When the balance falls below the threshold, the card on file is charged the reload amount.</p>
      {ar?.suspended && (
        <Message kind="warning">
          Auto-reload is suspended{ar.suspendedReason ? `: ${ar.suspendedReason}` : ''}. Update the payment method, then save this form to turn it back on.
        </Message>
      )}
      <fieldset disabled={!isAdmin}>
        <legend class="visually-hidden">Auto-reload settings</legend>
        <div class="checkbox">
          <input id="ar-enabled" type="checkbox" checked={enabled} onChange={(e) => setEnabled((e.target as HTMLInputElement).checked)} />
          <label for="ar-enabled">Reload automatically</label>
        </div>
        <div class="grid-2">
          <Field label="When the balance falls below (USD)">
            {(p) => <input {...p} name="threshold" inputMode="decimal" required value={threshold} onInput={(e) => setThreshold(val(e))} />}
          </Field>
          <Field label="Add this amount (USD)">
            {(p) => <input {...p} name="reloadAmount" inputMode="decimal" required value={amount} onInput={(e) => setAmount(val(e))} />}
          </Field>
        </div>
        {isAdmin && (
          <button type="submit" class="button" disabled={busy}>
            Save auto-reload
          </button>
        )}
      </fieldset>
      {!isAdmin && <p class="muted">Only workspace admins can change auto-reload.</p>}
      <ErrorMessage error={error} />
      {done && <Message kind="success">Auto-reload saved.</Message>}
    </form>
  );
}

function Ledger({ tick }: { tick: number }) {
  const ws = useWorkspace();
  const ledger = useLoad(
    (signal) => get<{ entries: LedgerEntry[] }>(`/v1/workspaces/${enc(ws.workspaceId)}/billing/ledger`, { signal }).then((r) => r.entries),
    [ws.workspaceId, tick],
  );
  const rows = [...(ledger.data ?? [])].reverse();
  return (
    <div class="card">
      <h2>Ledger</h2>
      {ledger.loading && !ledger.data ? (
        <Loading what="Loading the ledger" />
      ) : ledger.error ? (
        <ErrorMessage error={ledger.error} />
      ) : rows.length === 0 ? (
        <p class="muted">No money has moved yet.</p>
      ) : (
        <div class="table-wrap">
          <table class="table" aria-label="Ledger, newest first">
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
              {rows.map((r, i) => (
                <tr key={r.id ?? i} data-testid="ledger-row">
                  <td>{dateTime(r.created)}</td>
                  <td>
                    {r.description ?? r.type}
                    {r.reason ? <span class="muted"> — {r.reason}</span> : null}
                  </td>
                  <td class="num">{usd(r.amount)}</td>
                  <td class="num">{r.balanceAfter !== undefined ? usd(r.balanceAfter) : '—'}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </div>
  );
}
