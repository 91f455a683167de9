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

/** nano-USD as a plain number, for chart scales only (never for amounts shown or sent). */
export const nanoToNumber = (n: bigint) => Number(n) / 1e9;

export function dateTime(iso: string | number | null | undefined): string {
  if (iso === null || iso === undefined || iso === '') return '—';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return String(iso);
  return d.toLocaleString(undefined, { year: 'numeric', month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit' });
}

/** As dateTime, to the second: rows of one minute (the audit log) stay in a visible order. */
export function dateTimeSeconds(iso: string | number | null | undefined): string {
  if (iso === null || iso === undefined || iso === '') return '—';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return String(iso);
  return d.toLocaleString(undefined, {
    year: 'numeric',
    month: 'short',
    day: 'numeric',
    hour: '2-digit',
    minute: '2-digit',
    second: '2-digit',
  });
}

export function integer(n: number | string | null | undefined): string {
  if (n === null || n === undefined || n === '') return '—';
  return Number(n).toLocaleString('en-US');
}
