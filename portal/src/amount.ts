import { formatUsd, parseUsd } from '../../src/platform/money';
import { usd } from './format';

/** The domain's money functions are the portal's: one parser and one formatter for nano-USD. */
export { formatUsd, parseUsd };

/** An amount the API sent (the domain's formatUsd output; a debit is negative) in nano-USD. */
export function amountNano(value: string): bigint {
  return value.startsWith('-') ? -parseUsd(value.slice(1)) : parseUsd(value);
}

/**
 * Dollar amounts typed into the portal, checked in the page with plain words before anything is
 * sent (the API's own messages speak of decimal strings and are meant for programs).
 */
export type AmountCheck = { ok: true; value: string } | { ok: false; error: string };

export interface AmountRules {
  /** Whole cents only (deposits, reload amounts, caps); otherwise up to 9 decimals (thresholds). */
  cents?: boolean;
  min?: string;
  minMessage?: string;
  max?: string;
  maxMessage?: string;
}

const EXAMPLE = 'Enter dollars, e.g. 100 or 2.50.';

export function checkDollars(raw: string, rules: AmountRules = {}): AmountCheck {
  let s = raw.trim().replace(/^\$\s*/, '');
  if (/^\d{1,3}(,\d{3})+(\.\d*)?$/.test(s)) s = s.replace(/,/g, '');
  if (!s) return { ok: false, error: EXAMPLE };
  const m = /^(\d+)(?:\.(\d*))?$/.exec(s);
  if (!m) return { ok: false, error: EXAMPLE };
  const decimals = (m[2] ?? '').length;
  if (rules.cents && decimals > 2) return { ok: false, error: 'Use whole cents: at most 2 digits after the point, e.g. 10.25.' };
  if (decimals > 9) return { ok: false, error: 'Use at most 9 digits after the point.' };
  if (m[1].length > 15) return { ok: false, error: rules.maxMessage ?? 'That amount is too large.' };
  // The form parseUsd takes: no leading zeros, no bare trailing point ("007.", "7." → "7").
  const nano = parseUsd(`${m[1].replace(/^0+(?=\d)/, '')}${m[2] ? `.${m[2]}` : ''}`);
  if (rules.min !== undefined && nano < parseUsd(rules.min))
    return { ok: false, error: rules.minMessage ?? `Enter at least ${usd(rules.min)}.` };
  if (rules.max !== undefined && nano > parseUsd(rules.max))
    return { ok: false, error: rules.maxMessage ?? `Enter at most ${usd(rules.max)}.` };
  return { ok: true, value: formatUsd(nano) };
}

/** Whole cents for display, rounded toward zero so a balance is never shown larger than it is. */
export function cents(value: string): string {
  return usd(value, { minDecimals: 2, maxDecimals: 2 });
}

/** True when `value` has digits beyond the cent (the display then offers the exact figure). */
export const finerThanCents = (value: string) => amountNano(value) % 10_000_000n !== 0n;
