import type { ReadModels } from '../../../platform/projections/read-models';
import { LEDGER, LedgerEntry } from './projection';

export type { LedgerEntry };

export interface LedgerPage {
  entries: LedgerEntry[];
  /** Index of the first entry not returned, or null at the end. */
  next: number | null;
  total: number;
}

/** Entries [from, from + limit) of the workspace's ledger, oldest first. */
export async function ledgerPage(rm: ReadModels, workspaceId: string, from: number, limit: number): Promise<LedgerPage> {
  const k = await rm.keys(LEDGER);
  const res = await rm.redis
    .multi()
    .lrange(k('ws', workspaceId, 'entries'), from, from + limit - 1)
    .llen(k('ws', workspaceId, 'entries'))
    .exec();
  const raw = (res?.[0]?.[1] as string[]) ?? [];
  const total = Number(res?.[1]?.[1] ?? 0);
  const entries = raw.map((r) => JSON.parse(r) as LedgerEntry);
  return { entries, next: from + entries.length < total ? from + entries.length : null, total };
}

export async function ledgerBalance(rm: ReadModels, workspaceId: string): Promise<bigint> {
  const k = await rm.keys(LEDGER);
  return BigInt((await rm.redis.get(k('ws', workspaceId, 'balance'))) ?? '0');
}
