import type { Response } from 'express';
import type { AppendResult, EventMetadata } from '../../eventstore/port';
import type { Services } from '../../services';
import type { AuthedUser } from './access';

/** Metadata of every event an account request appends: who, and which request. */
export function metaOf(res: Response, actor?: string): EventMetadata {
  const user = res.locals.user as AuthedUser | undefined;
  return { actor: actor ?? user?.userId ?? 'anonymous', correlationId: res.locals.requestId as string | undefined };
}

/**
 * Read-your-writes: waits until the projections applied what was appended, so the next request
 * (a new key, a removed member) sees it. Answers anyway after READ_YOUR_WRITES_TIMEOUT_MS.
 */
export async function settle(s: Services, ...appended: (AppendResult | undefined)[]): Promise<void> {
  const positions = appended.filter((a): a is AppendResult => !!a).map((a) => a.position);
  if (!positions.length) return;
  const max = positions.reduce((m, p) => (p > m ? p : m));
  const ok = await s.progress.waitFor(max, s.config.READ_YOUR_WRITES_TIMEOUT_MS);
  if (!ok) s.log.warn({ position: max.toString() }, 'projections did not reach an account write in time; answering anyway');
}
