import type { NanoUsd } from '../../../platform/money';
import type { ReadModels } from '../../../platform/projections/read-models';
import type { GrantMeta } from '../../grants';
import { BALANCES } from '../balances/projection';

export interface GrantView extends GrantMeta {
  /** What it has left to draw on (0 once used up or expired). */
  remaining: NanoUsd;
  /** What its expiry took out of the balance, once recorded. */
  expired: NanoUsd | null;
  status: 'active' | 'used' | 'expired';
}

/**
 * A workspace's grants from the balances read model (what was granted, and the book's remaining
 * amounts): newest first. A grant past its expiry is `expired` at once, though the ledger entry of
 * its expiry is written by the expiry worker (what it has left already counts for nothing).
 */
export async function creditGrantsOf(rm: ReadModels, workspaceId: string, now: Date): Promise<GrantView[]> {
  const [meta, ws] = (await rm.read(BALANCES, (k) => [
    ['hgetall', k.ws(workspaceId, 'grants')],
    ['hgetall', k.ws(workspaceId)],
  ])) as [Record<string, string> | null, Record<string, string> | null];
  const m = meta ?? {};
  const book = ws ?? {};
  const out: GrantView[] = [];
  for (const [field, json] of Object.entries(m)) {
    if (field.endsWith(':expired')) continue;
    const g = JSON.parse(json) as GrantMeta;
    const expiredRaw = m[`${field}:expired`];
    const expired = expiredRaw === undefined ? null : BigInt(expiredRaw);
    const past = g.expiresAt !== null && Date.parse(g.expiresAt) <= now.getTime();
    const left = BigInt(book[`g:${g.grantId}`] ?? '0');
    const remaining = expired !== null || past ? 0n : left;
    const status = expired !== null || (past && left > 0n) ? 'expired' : remaining > 0n ? 'active' : 'used';
    out.push({ ...g, remaining, expired: expired ?? (past && left > 0n ? left : null), status });
  }
  return out.sort((a, b) => b.grantedAt.localeCompare(a.grantedAt) || a.grantId.localeCompare(b.grantId));
}
