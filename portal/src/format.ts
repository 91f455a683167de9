/**
 * Money arrives as USD decimal strings ("100", "0.0000125"): it is formatted as text, never through
 * a float, so what the portal shows is exactly what the ledger holds.
 */
export function usd(value: string | number | null | undefined, opts: { minDecimals?: number; maxDecimals?: number } = {}): string {
  if (value === null || value === undefined || value === '') return '—';
  const s = typeof value === 'number' ? value.toFixed(9) : String(value).trim();
  const m = /^(-?)(\d*)(?:\.(\d*))?$/.exec(s);
  if (!m) return s;
  const [, sign, whole = '0', fracRaw = ''] = m;
  const min = opts.minDecimals ?? 2;
  const max = opts.maxDecimals ?? 9;
  let frac = fracRaw.replace(/0+$/, '').slice(0, max);
  if (frac.length < min) frac = frac.padEnd(min, '0');
  const grouped = (whole.replace(/^0+(?=\d)/, '') || '0').replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  return `${sign}$${grouped}${frac ? `.${frac}` : ''}`;
}

/** Adds two USD decimal strings exactly (nano-USD integers underneath). */
export function toNano(value: string): bigint {
  const m = /^(-?)(\d*)(?:\.(\d{0,9}))?/.exec(String(value).trim());
  if (!m) return 0n;
  const n = BigInt(m[2] || '0') * 1_000_000_000n + BigInt((m[3] ?? '').padEnd(9, '0') || '0');
  return m[1] ? -n : n;
}

export function fromNano(n: bigint): string {
  const neg = n < 0n;
  const a = neg ? -n : n;
  const whole = a / 1_000_000_000n;
  const frac = (a % 1_000_000_000n).toString().padStart(9, '0').replace(/0+$/, '');
  return `${neg ? '-' : ''}${whole}${frac ? `.${frac}` : ''}`;
}

export const nanoToNumber = (n: bigint) => Number(n) / 1e9;

export function dateTime(iso: string | number | null | undefined): string {
  if (iso === null || iso === undefined || iso === '') return '—';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return String(iso);
  return d.toLocaleString(undefined, { year: 'numeric', month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit' });
}

export function integer(n: number | string | null | undefined): string {
  if (n === null || n === undefined || n === '') return '—';
  return Number(n).toLocaleString('en-US');
}
