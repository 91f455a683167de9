import { PositionWaiters } from '../../../src/platform/projections/position-waiters';

describe('PositionWaiters', () => {
  it('releases the waiters at or below the position reached, and only those', async () => {
    const w = new PositionWaiters();
    const at5 = w.wait(5n, 10_000);
    const at7 = w.wait(7n, 10_000);
    const at9 = w.wait(9n, 50);
    w.reached(7n);
    await expect(at5).resolves.toBe(true);
    await expect(at7).resolves.toBe(true);
    await expect(at9).resolves.toBe(false);
  });

  it('a waiter that timed out is not released later', async () => {
    const w = new PositionWaiters();
    await expect(w.wait(3n, 10)).resolves.toBe(false);
    expect(() => w.reached(3n)).not.toThrow();
  });
});
