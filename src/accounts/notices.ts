import type { Redis } from 'ioredis';
import type { Keyspace } from '../platform/projections/keyspace';
import { workspacesOf } from './projections/memberships/queries';
import type { Services } from '../services';

/**
 * Notices shown in GET /v1/me. The contract for writers (billing, …):
 *
 *   {prefix}notices:user:{userId}  hash: noticeId → JSON Notice   — for one user
 *   {prefix}notices:ws:{wsId}      hash: noticeId → JSON Notice   — for a workspace's admins
 *                                  (audience "admins", the default) or all its members ("members")
 *
 * Both are shared keys (outside projection generations). Write with HSET using a stable noticeId
 * (the id of the event that caused it, say), so a replay or retry writes the same field again;
 * clear with HDEL when the condition is resolved (auto-reload re-enabled, …). Inside a projection:
 * `tx.multi.hset(noticeKeys(tx.sharedKey).workspace(wsId), id, JSON.stringify(notice))`.
 */
export interface Notice {
  id: string;
  /** A short machine-readable kind, e.g. "auto_reload_suspended". */
  kind: string;
  message: string;
  workspaceId?: string;
  audience?: 'admins' | 'members';
  /** ISO-8601. */
  created: string;
}

export function noticeKeys(sharedKey: (...parts: string[]) => string) {
  return {
    user: (userId: string) => sharedKey('notices', 'user', userId),
    workspace: (workspaceId: string) => sharedKey('notices', 'ws', workspaceId),
  };
}

export async function postNotice(
  redis: Redis,
  ks: Keyspace,
  target: { userId: string } | { workspaceId: string },
  notice: Notice,
): Promise<void> {
  const keys = noticeKeys((...p) => ks.shared(...p));
  const key = 'userId' in target ? keys.user(target.userId) : keys.workspace(target.workspaceId);
  await redis.hset(key, notice.id, JSON.stringify(notice));
}

export async function clearNotice(
  redis: Redis,
  ks: Keyspace,
  target: { userId: string } | { workspaceId: string },
  id: string,
): Promise<void> {
  const keys = noticeKeys((...p) => ks.shared(...p));
  await redis.hdel('userId' in target ? keys.user(target.userId) : keys.workspace(target.workspaceId), id);
}

/** The user's own notices and those of their workspaces meant for them, newest first. */
export async function readNotices(s: Services, userId: string): Promise<Notice[]> {
  const keys = noticeKeys((...p) => s.ks.shared(...p));
  const workspaces = await workspacesOf(s.readModels, userId);
  const p = s.redis.pipeline().hvals(keys.user(userId));
  for (const w of workspaces) p.hvals(keys.workspace(w.workspaceId));
  const res = (await p.exec()) ?? [];
  const out: Notice[] = [];
  res.forEach(([, vals], i) => {
    const ws = i === 0 ? null : workspaces[i - 1];
    for (const v of (vals as string[]) ?? []) {
      let n: Notice;
      try {
        n = JSON.parse(v) as Notice;
      } catch {
        continue;
      }
      if (ws) {
        if ((n.audience ?? 'admins') === 'admins' && ws.role !== 'admin') continue;
        n.workspaceId ??= ws.workspaceId;
      }
      out.push(n);
    }
  });
  return out.sort((a, b) => (b.created ?? '').localeCompare(a.created ?? ''));
}
