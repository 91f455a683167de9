import type { ReadModels } from '../../../platform/projections/read-models';
import type { StoredAuditEntry } from './entries';
import { AUDIT, POSITION_WIDTH } from './projection';

export interface PagedAuditEntry extends StoredAuditEntry {
  /** This entry's place in the log: a cursor for the entries older than it. */
  cursor: string;
}

export interface AuditPage {
  entries: PagedAuditEntry[];
  /** Pass back as `cursor` for the next, older page; null on the last page. */
  nextCursor: string | null;
}

/** A cursor is the (padded) position of the last entry a page returned. */
export const isAuditCursor = (c: string) => /^\d{1,20}$/.test(c);

/** The workspace's entries, newest first, strictly older than `cursor`. */
export async function auditPage(rm: ReadModels, workspaceId: string, opts: { cursor?: string; limit: number }): Promise<AuditPage> {
  const k = await rm.keys(AUDIT);
  const max = opts.cursor ? `(${opts.cursor.padStart(POSITION_WIDTH, '0')}` : '+';
  const raw = await rm.redis.zrevrangebylex(k('ws', workspaceId), max, '-', 'LIMIT', 0, opts.limit + 1);
  const more = raw.length > opts.limit;
  const page = raw.slice(0, opts.limit);
  const entries = page.map((m) => ({
    ...(JSON.parse(m.slice(POSITION_WIDTH + 1)) as StoredAuditEntry),
    cursor: m.slice(0, POSITION_WIDTH),
  }));
  return { entries, nextCursor: more && entries.length ? entries[entries.length - 1].cursor : null };
}

/** Name and last four of keys, also deleted ones. */
export async function auditKeys(rm: ReadModels, keyIds: string[]): Promise<Map<string, { name?: string; last4?: string }>> {
  const out = new Map<string, { name?: string; last4?: string }>();
  if (!keyIds.length) return out;
  const k = await rm.keys(AUDIT);
  const vals = await rm.redis.hmget(k('keys'), ...keyIds);
  keyIds.forEach((id, i) => {
    const v = vals[i];
    if (v) out.set(id, JSON.parse(v) as { name?: string; last4?: string });
  });
  return out;
}

export async function auditInvitationEmails(rm: ReadModels, ids: string[]): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  if (!ids.length) return out;
  const k = await rm.keys(AUDIT);
  const vals = await rm.redis.hmget(k('invitations'), ...ids);
  ids.forEach((id, i) => {
    if (vals[i]) out.set(id, vals[i]!);
  });
  return out;
}
