/**
 * Money is a bigint count of nano-USD (1 USD = 1 000 000 000). On the wire and in events it is a
 * decimal string: nano-USD as an integer string in events (`…NanoUsd` fields), USD with up to nine
 * decimals in the API (`"100"`, `"2.5"`, `"0.000002500"`). Never a float.
 */
export type NanoUsd = bigint;

export const NANO_PER_USD = 1_000_000_000n;

const USD_PATTERN = /^(0|[1-9]\d{0,14})(\.\d{1,9})?$/;

export class MoneyFormatError extends Error {
  override readonly name = 'MoneyFormatError';
}

/** "12.345" → 12 345 000 000n. Rejects negatives, exponents, more than 9 decimals and floats. */
export function parseUsd(value: string): NanoUsd {
  if (typeof value !== 'string' || !USD_PATTERN.test(value)) {
    throw new MoneyFormatError(`"${String(value)}" is not a USD amount (a decimal string such as "100" or "2.50")`);
  }
  const [whole, frac = ''] = value.split('.');
  return BigInt(whole) * NANO_PER_USD + BigInt(frac.padEnd(9, '0'));
}

export function isUsd(value: unknown): value is string {
  return typeof value === 'string' && USD_PATTERN.test(value);
}

/** 12 345 000 000n → "12.345"; whole amounts carry no decimals; negatives keep their sign. */
export function formatUsd(nano: NanoUsd): string {
  const neg = nano < 0n;
  const abs = neg ? -nano : nano;
  const whole = abs / NANO_PER_USD;
  const frac = (abs % NANO_PER_USD).toString().padStart(9, '0').replace(/0+$/, '');
  return `${neg ? '-' : ''}${whole}${frac ? '.' + frac : ''}`;
}

/** Event fields carry nano-USD as integer strings. */
export function nano(value: string): NanoUsd {
  if (!/^-?\d+$/.test(value)) throw new MoneyFormatError(`"${value}" is not an integer nano-USD amount`);
  return BigInt(value);
}

export const usd = (whole: number | bigint): NanoUsd => BigInt(whole) * NANO_PER_USD;
