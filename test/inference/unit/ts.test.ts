import { isValidTs, parseTs, tsToMillis } from '../../../src/inference/ts';

describe('ts: seconds, or milliseconds where only that makes sense', () => {
  test('seconds since the epoch (integer or fractional)', () => {
    expect(parseTs(1735689600).toISOString()).toBe('2025-01-01T00:00:00.000Z');
    expect(parseTs(1735689600.25).toISOString()).toBe('2025-01-01T00:00:00.250Z');
    expect(parseTs(0).toISOString()).toBe('1970-01-01T00:00:00.000Z');
  });

  test('values that only make sense as milliseconds are read as milliseconds', () => {
    // The reference API's own sample sends milliseconds.
    expect(parseTs(1735689600000).toISOString()).toBe('2025-01-01T00:00:00.000Z');
    expect(parseTs(1735689600123).toISOString()).toBe('2025-01-01T00:00:00.123Z');
  });

  test('the threshold: 1e11 is still seconds (year 5138), anything above is milliseconds', () => {
    expect(tsToMillis(1e11)).toBe(1e14);
    expect(tsToMillis(1e11 + 1)).toBe(1e11 + 1);
  });

  test('not timestamps: negative, not finite, beyond the year 5138 in milliseconds', () => {
    for (const bad of [-1, Number.NaN, Number.POSITIVE_INFINITY, 1e14 + 1, 1e18]) {
      expect(isValidTs(bad)).toBe(false);
      expect(() => parseTs(bad)).toThrow(RangeError);
    }
  });
});
