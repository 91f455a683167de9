import type { AppendResult } from '../eventstore/port';
import type { PlatformServices as Services } from '../services';

/**
 * Read-your-writes: waits until the read models (the projections) applied what was appended, so the
 * next request (a new key, a deposit, new settings) sees it. Not the reactors: what they do (a
 * webhook enqueued, an alert stored) is not what the next request reads, and an api in a process of
 * its own could not wait for them anyway, so every role waits for the same. Answers anyway after
 * READ_YOUR_WRITES_TIMEOUT_MS. Appends that wrote nothing (undefined) are skipped.
 */
export async function readYourWrites(
  s: Pick<Services, 'progress' | 'config' | 'log'>,
  ...appended: (AppendResult | undefined)[]
): Promise<void> {
  const positions = appended.filter((a): a is AppendResult => !!a).map((a) => a.position);
  if (!positions.length) return;
  const max = positions.reduce((m, p) => (p > m ? p : m));
  const ok = await s.progress.waitForReadModels(max, s.config.READ_YOUR_WRITES_TIMEOUT_MS);
  if (!ok) s.log.warn({ position: max.toString() }, 'projections did not reach a write in time; answering anyway');
}
