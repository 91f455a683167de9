import { useEffect, useRef, useState } from 'preact/hooks';

declare global {
  interface Window {
    Stripe?: (key: string) => StripeJs;
  }
}
interface StripeJs {
  elements(): { create(type: 'card', opts?: unknown): StripeCardElement };
  createPaymentMethod(opts: {
    type: 'card';
    card: StripeCardElement;
  }): Promise<{ paymentMethod?: { id: string }; error?: { message?: string } }>;
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
export function StripeCard({
  publishableKey,
  busy,
  onPaymentMethod,
}: {
  publishableKey: string;
  busy: boolean;
  onPaymentMethod: (id: string) => Promise<void>;
}) {
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
