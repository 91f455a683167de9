import { useState } from 'preact/hooks';
import { enc, post } from '../../api';
import { useSession, useWorkspace } from '../../state';
import { useCardMessages, type CardProps, type Outcome } from './card-messages';
import { StripeCard } from './stripe-card';
import { useAction } from '../../action';

export function PaymentMethod({ billing, isAdmin, onChanged, actions }: CardProps) {
  const ws = useWorkspace();
  const { config } = useSession();
  const cards = config?.testCards ?? [];
  // The card on file, when it is one of the test cards (the sandbox keeps Stripe's test ids).
  const [choice, setChoice] = useState(() =>
    billing.paymentMethod && cards.some((c) => c.paymentMethodId === billing.paymentMethod!.id) ? billing.paymentMethod.id : 'pm_card_visa',
  );
  const msg = useCardMessages(actions);
  const pm = billing.paymentMethod;

  const { run: attach, busy } = useAction(
    async (paymentMethodId: string) => {
      await post(`/v1/workspaces/${enc(ws.workspaceId)}/billing/payment-method`, { paymentMethodId });
      await onChanged();
      // A test card that declines is on file, but no charge with it will go through: say so, not "saved" in green.
      const behaviour = cards.find((c) => c.paymentMethodId === paymentMethodId)?.behaviour;
      msg.setOutcome(savedCardOutcome(behaviour));
    },
    { start: msg.start, fail: msg.setError },
  );

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
    return {
      kind: 'warning',
      text: `Card saved, but it will not pay (${behaviourText(behaviour)}): deposits and auto-reload with it will fail. Choose a card that charges.`,
    };
  }
  if (behaviour === 'requires_authentication') {
    return {
      kind: 'warning',
      text: 'Card saved. It needs 3-D Secure authentication, so auto-reload, which charges with nobody present, will fail with it.',
    };
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
