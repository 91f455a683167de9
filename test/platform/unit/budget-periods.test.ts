import { isBudgetPeriod, periodIdsAt, periodWindow } from '../../../src/platform/budget-periods';

const at = (iso: string) => new Date(iso);

describe('budget periods (UTC)', () => {
  test.each([
    // a Wednesday mid-month
    ['2026-11-25T13:45:00.000Z', { daily: '2026-11-25', weekly: '2026-W48', monthly: '2026-11' }],
    // the last instant of a Sunday, and the Monday after: a new ISO week
    ['2026-03-01T23:59:59.999Z', { daily: '2026-03-01', weekly: '2026-W09', monthly: '2026-03' }],
    ['2026-03-02T00:00:00.000Z', { daily: '2026-03-02', weekly: '2026-W10', monthly: '2026-03' }],
    // ISO week-years: 1 Jan 2027 (a Friday) is in 2026's week 53; 30 Dec 2024 (a Monday) starts 2025-W01
    ['2027-01-01T00:00:00.000Z', { daily: '2027-01-01', weekly: '2026-W53', monthly: '2027-01' }],
    ['2024-12-30T00:00:00.000Z', { daily: '2024-12-30', weekly: '2025-W01', monthly: '2024-12' }],
  ])('%s falls in %j', (iso, ids) => {
    expect(periodIdsAt(at(iso))).toEqual(ids);
  });

  test('each window starts at its boundary and resets at the next one', () => {
    const now = at('2026-11-25T13:45:00.000Z'); // a Wednesday
    expect(periodWindow('daily', now)).toEqual({
      id: '2026-11-25',
      start: at('2026-11-25T00:00:00.000Z'),
      resetsAt: at('2026-11-26T00:00:00.000Z'),
    });
    expect(periodWindow('weekly', now)).toEqual({
      id: '2026-W48',
      start: at('2026-11-23T00:00:00.000Z'),
      resetsAt: at('2026-11-30T00:00:00.000Z'),
    });
    expect(periodWindow('monthly', now)).toEqual({
      id: '2026-11',
      start: at('2026-11-01T00:00:00.000Z'),
      resetsAt: at('2026-12-01T00:00:00.000Z'),
    });
    expect(periodWindow('monthly', at('2026-12-31T23:59:59.999Z')).resetsAt).toEqual(at('2027-01-01T00:00:00.000Z'));
    // A Sunday belongs to the week that started the Monday before.
    expect(periodWindow('weekly', at('2026-11-29T23:59:59.999Z')).start).toEqual(at('2026-11-23T00:00:00.000Z'));
    // The instant a period resets belongs to the next one.
    for (const p of ['daily', 'weekly', 'monthly'] as const) {
      const w = periodWindow(p, now);
      expect(periodWindow(p, w.resetsAt).start).toEqual(w.resetsAt);
      expect(periodWindow(p, new Date(w.resetsAt.getTime() - 1)).id).toBe(w.id);
    }
  });

  test('only the three periods exist', () => {
    expect(['daily', 'weekly', 'monthly'].every(isBudgetPeriod)).toBe(true);
    expect(['hourly', 'Daily', '', null, 7].some(isBudgetPeriod)).toBe(false);
  });
});
