import type { Services } from '../../../services';
import { reservationKeys } from '../../projections/balances/reservation-keys';
import { expireCredit } from '../../usecases';
import { scanAll } from '../../../platform/redis';
import { globEscape } from '../../../platform/projections/generations';

/** How often the worker looks for grants past their expiry (the admission figure excludes them at once; this writes the ledger entry). */
export const CREDIT_EXPIRY_EVERY_MS = 15_000;

type Deps = Pick<Services, 'store' | 'now' | 'newId' | 'progress' | 'config' | 'log' | 'redis' | 'ks'>;

/**
 * Records the expiry of every grant the service clock has passed (`credit-expiry`, the shared to-do
 * the balances projection keeps), except while the workspace still has a hold admitted before the
 * grant expired: such a request may draw on the grant when its debit lands (grants.ts), so its
 * expiry waits until those holds are settled or released (the sweeper bounds how long). The
 * decider records an expiry once (exact revision on billing-{ws}); a second worker or tick appends
 * nothing. Returns how many expiries it recorded.
 */
export async function expireDueCredits(s: Deps): Promise<number> {
  const now = s.now().getTime();
  // One to-do per workspace (credit-expiry:{ws:<id>}, in its slot), found on every primary as the sweeper finds its index.
  const due: string[] = [];
  await scanAll(s.redis, `${globEscape(s.ks.shared('credit-expiry'))}:{ws:*`, async (node, keys) => {
    for (const k of keys) due.push(...(await node.zrangebyscore(k, '-inf', now, 'WITHSCORES', 'LIMIT', 0, 500)));
  });
  let recorded = 0;
  for (let i = 0; i < due.length; i += 2) {
    const [workspaceId, grantId] = due[i].split(' ');
    if (await holdsAdmittedBefore(s, workspaceId, Number(due[i + 1]))) continue;
    if (await expireCredit(s, workspaceId, grantId)) recorded += 1;
  }
  return recorded;
}

/** Whether the workspace has a hold still open that was admitted before `ms`. */
async function holdsAdmittedBefore(s: Pick<Services, 'redis' | 'ks'>, workspaceId: string, ms: number): Promise<boolean> {
  const k = reservationKeys((...p) => s.ks.shared(...p), workspaceId);
  // The holds hash also keeps its sums ('=total', '=k:…', '=m:…'): only request ids are holds.
  const requests = (await s.redis.hkeys(k.held)).filter((f) => !f.startsWith('='));
  if (!requests.length) return false;
  const scores = await s.redis.zmscore(k.open, ...requests.map((r) => `${workspaceId}:${r}`));
  return scores.some((sc) => sc !== null && Number(sc) < ms);
}

/** The loop in the worker role: one pass every CREDIT_EXPIRY_EVERY_MS. */
export function startCreditExpiryWorker(s: Deps, everyMs = CREDIT_EXPIRY_EVERY_MS): { close(): Promise<void> } {
  let running: Promise<unknown> = Promise.resolve();
  const timer = setInterval(() => {
    running = running.then(() => expireDueCredits(s)).catch((err: Error) => s.log.warn({ err: err.message }, 'credit expiry pass failed'));
  }, everyMs);
  timer.unref();
  return {
    async close() {
      clearInterval(timer);
      await running;
    },
  };
}
