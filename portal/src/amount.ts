import { fromNano, toNano, usd } from './format';

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
  const nano = toNano(s);
  if (rules.min !== undefined && nano < toNano(rules.min)) return { ok: false, error: rules.minMessage ?? `Enter at least ${usd(rules.min)}.` };
  if (rules.max !== undefined && nano > toNano(rules.max)) return { ok: false, error: rules.maxMessage ?? `Enter at most ${usd(rules.max)}.` };
  return { ok: true, value: fromNano(nano) };
}

/** Whole cents for display, rounded toward zero so a balance is never shown larger than it is. */
export function cents(value: string): string {
  return usd(value, { minDecimals: 2, maxDecimals: 2 });
}

/** True when `value` has digits beyond the cent (the display then offers the exact figure). */
export const finerThanCents = (value: string) => toNano(value) % 10_000_000n !== 0n;
