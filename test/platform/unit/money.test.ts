import fc from 'fast-check';
import { formatUsd, MoneyFormatError, parseUsd, usd } from '../../../src/platform/money';
import { tokenCost } from '../../../src/inference/metering';

describe('money', () => {
  it('parses USD decimal strings into exact nano-USD', () => {
    expect(parseUsd('100')).toBe(100_000_000_000n);
    expect(parseUsd('2.5')).toBe(2_500_000_000n);
    expect(parseUsd('0.000000001')).toBe(1n);
    expect(parseUsd('0')).toBe(0n);
  });

  it.each(['-1', '1e3', '1.0000000001', '01', '', ' 1', '1.', '.5', 'NaN'])('refuses %p', (v) => {
    expect(() => parseUsd(v)).toThrow(MoneyFormatError);
  });

  it('formats without trailing zeros and round-trips every amount', () => {
    expect(formatUsd(100_000_000_000n)).toBe('100');
    expect(formatUsd(2_500_000n)).toBe('0.0025');
    expect(formatUsd(-1n)).toBe('-0.000000001');
    fc.assert(fc.property(fc.bigInt({ min: 0n, max: 10n ** 20n }), (n) => parseUsd(formatUsd(n)) === n));
  });

  it('prices tokens exactly: 2.50 USD per 1M in, 10 USD per 1M out', () => {
    const prices = { inputNanoUsdPerToken: 2500n, outputNanoUsdPerToken: 10000n };
    expect(tokenCost(prices, 1_000_000, 0)).toBe(usd(2) + 500_000_000n);
    expect(tokenCost(prices, 0, 1_000_000)).toBe(usd(10));
    expect(tokenCost(prices, 3, 7)).toBe(3n * 2500n + 7n * 10000n);
  });
});
