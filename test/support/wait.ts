/**
 * Waiting in tests: poll for a state instead of sleeping for a guessed time. Limits are stretched on
 * a busy machine (`patience`).
 *
 * - `until` throws when the state is not reached in time (use it when nothing else would fail);
 * - `eventually` returns the last value either way, so the `expect` that follows fails with a diff
 *   of what was there instead of a bare timeout.
 */

import { availableParallelism, loadavg } from 'node:os';

/**
 * A limit for a state that should come, sized to the machine: `ms` on a quiet machine, stretched by
 * the load per core when the machine is busy (load 20 on 2 cores: ten times). The limit only decides
 * how long a test waits before it fails; a test that passes returns as soon as its state is there.
 */
export function patience(ms: number): number {
  return Math.round(ms * Math.max(1, loadavg()[0] / availableParallelism()));
}

type Truthy<T> = Exclude<T, false | null | undefined | 0 | ''>;

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Polls `fn` until it returns something truthy and returns that (or throws after `timeoutMs`). */
export async function until<T>(fn: () => T | Promise<T>, timeoutMs = 10_000, what = 'condition', everyMs = 10): Promise<Truthy<T>> {
  const limit = patience(timeoutMs);
  const deadline = Date.now() + limit;
  for (;;) {
    const v = await fn();
    if (v) return v as Truthy<T>;
    if (Date.now() > deadline) throw new Error(`timed out after ${limit} ms waiting for ${what}`);
    await sleep(everyMs);
  }
}

/** Polls `fn` until `ok` holds for its value or `timeoutMs` passed, and returns the last value. */
export async function eventually<T>(fn: () => Promise<T>, ok: (v: T) => boolean, timeoutMs = 10_000, everyMs = 25): Promise<T> {
  const deadline = Date.now() + patience(timeoutMs);
  for (;;) {
    const v = await fn();
    if (ok(v) || Date.now() > deadline) return v;
    await sleep(everyMs);
  }
}
