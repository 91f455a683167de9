import { MoneyFormatError } from '../../../src/platform/money';
import { amountNano, cents, checkDollars, finerThanCents } from '../../../portal/src/amount';

describe('checkDollars (amounts typed into the portal)', () => {
  test.each([
    ['100', '100'],
    ['2.50', '2.5'],
    ['$1,250.50', '1250.5'],
    [' 20 ', '20'],
    ['007.50', '7.5'],
    ['7.', '7'],
  ])('%j is accepted as %j', (typed, value) => {
    expect(checkDollars(typed, { cents: true })).toEqual({ ok: true, value });
  });

  test.each([
    ['', 'Enter dollars, e.g. 100 or 2.50.'],
    ['abc', 'Enter dollars, e.g. 100 or 2.50.'],
    ['-5', 'Enter dollars, e.g. 100 or 2.50.'],
    ['1e3', 'Enter dollars, e.g. 100 or 2.50.'],
    ['10.001', 'Use whole cents: at most 2 digits after the point, e.g. 10.25.'],
    ['99999999999999999999999', 'That amount is too large.'],
  ])('%j is refused with a plain sentence', (typed, error) => {
    expect(checkDollars(typed, { cents: true })).toEqual({ ok: false, error });
  });

  test('minimum and maximum use their own words, compared exactly', () => {
    const rules = { cents: true, min: '100', minMessage: 'Your first deposit must be at least $100.00.', max: '999999.99' };
    expect(checkDollars('99.99', rules)).toEqual({ ok: false, error: 'Your first deposit must be at least $100.00.' });
    expect(checkDollars('100', rules)).toEqual({ ok: true, value: '100' });
    expect(checkDollars('999999.99', rules)).toEqual({ ok: true, value: '999999.99' });
    expect(checkDollars('1000000', rules)).toEqual({ ok: false, error: 'Enter at most $999,999.99.' });
  });

  test('without the cents rule, up to 9 decimals are taken (thresholds)', () => {
    expect(checkDollars('99.9999')).toEqual({ ok: true, value: '99.9999' });
    expect(checkDollars('0.000000001')).toEqual({ ok: true, value: '0.000000001' });
    expect(checkDollars('0.0000000001')).toEqual({ ok: false, error: 'Use at most 9 digits after the point.' });
  });
});

describe('cents (balances shown to the cent)', () => {
  test('rounds toward zero and keeps two decimals', () => {
    expect(cents('149.9960675')).toBe('$149.99');
    expect(cents('0')).toBe('$0.00');
    expect(cents('1234.5')).toBe('$1,234.50');
    expect(cents('-0.019')).toBe('-$0.01');
  });
  test('finerThanCents says when the exact figure differs', () => {
    expect(finerThanCents('149.9960675')).toBe(true);
    expect(finerThanCents('149.99')).toBe(false);
    expect(finerThanCents('100')).toBe(false);
  });
});

describe('amountNano (amounts the API sent, read with the domain parser)', () => {
  test("reads the API's decimal strings, debits negative", () => {
    expect(amountNano('149.9960675')).toBe(149_996_067_500n);
    expect(amountNano('-0.0000125')).toBe(-12_500n);
    expect(amountNano('0')).toBe(0n);
  });
  test('refuses what the API never sends instead of guessing', () => {
    expect(() => amountNano('1e3')).toThrow(MoneyFormatError);
    expect(() => amountNano('')).toThrow(MoneyFormatError);
  });
});
