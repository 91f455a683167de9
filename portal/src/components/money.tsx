import { cents, finerThanCents } from '../amount';
import { usd } from '../format';

/** Whole cents, rounded toward zero; the exact figure on hover (and to screen readers) when finer. */
export function Cents({ value }: { value: string }) {
  if (!finerThanCents(value)) return <>{cents(value)}</>;
  return (
    <span title={`Exactly ${usd(value)}`} data-exact={value}>
      {cents(value)}
      <span class="visually-hidden"> (exactly {usd(value)})</span>
    </span>
  );
}
