/** Callers waiting for a position to be reached (ProjectionRunner.waitFor), each with its own timeout. */
export class PositionWaiters {
  private readonly waiters = new Set<{ position: bigint; resolve: () => void }>();

  /** Resolves true once `reached` is called with `position` or beyond, false after `timeoutMs`. */
  wait(position: bigint, timeoutMs: number): Promise<boolean> {
    return new Promise((resolve) => {
      const w = {
        position,
        resolve: () => {
          clearTimeout(timer);
          this.waiters.delete(w);
          resolve(true);
        },
      };
      const timer = setTimeout(() => {
        this.waiters.delete(w);
        resolve(false);
      }, timeoutMs);
      this.waiters.add(w);
    });
  }

  /** Releases every waiter at or below `position`. */
  reached(position: bigint): void {
    for (const w of [...this.waiters]) if (w.position <= position) w.resolve();
  }
}
