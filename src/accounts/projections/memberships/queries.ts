import type { Role } from '../../events';
import type { ReadModels } from '../../../platform/projections/read-models';
import { MEMBERSHIPS } from './projection';

export interface WorkspaceInfo {
  workspaceId: string;
  name: string;
  personal: boolean;
  createdBy: string;
  created: string;
}

export interface Membership extends WorkspaceInfo {
  role: Role;
}

function toInfo(h: Record<string, string>): WorkspaceInfo | null {
  if (!h.workspaceId) return null;
  return { workspaceId: h.workspaceId, name: h.name, personal: h.personal === 'true', createdBy: h.createdBy, created: h.created };
}

const asRole = (v: string | null | undefined): Role | null => (v === 'admin' || v === 'member' ? v : null);

export async function roleOf(rm: ReadModels, workspaceId: string, userId: string): Promise<Role | null> {
  const k = await rm.keys(MEMBERSHIPS);
  return asRole(await rm.redis.hget(k('ws', workspaceId, 'members'), userId));
}

export async function workspaceInfo(rm: ReadModels, workspaceId: string): Promise<WorkspaceInfo | null> {
  const k = await rm.keys(MEMBERSHIPS);
  return toInfo(await rm.redis.hgetall(k('ws', workspaceId)));
}

/** The workspace and the user's role in it, in one round trip after the generation; null when not a member. */
export async function membership(rm: ReadModels, workspaceId: string, userId: string): Promise<Membership | null> {
  const k = await rm.keys(MEMBERSHIPS);
  const res = await rm.redis
    .multi()
    .hget(k('ws', workspaceId, 'members'), userId)
    .hgetall(k('ws', workspaceId))
    .exec();
  const role = asRole(res?.[0]?.[1] as string | null);
  const info = toInfo((res?.[1]?.[1] as Record<string, string>) ?? {});
  return role && info ? { ...info, role } : null;
}

/** The user's workspaces, personal first, then by name. */
export async function workspacesOf(rm: ReadModels, userId: string): Promise<Membership[]> {
  const k = await rm.keys(MEMBERSHIPS);
  const roles = await rm.redis.hgetall(k('user', userId, 'ws'));
  const ids = Object.keys(roles);
  if (!ids.length) return [];
  const p = rm.redis.pipeline();
  for (const id of ids) p.hgetall(k('ws', id));
  const res = (await p.exec()) ?? [];
  const out: Membership[] = [];
  ids.forEach((id, i) => {
    const info = toInfo((res[i]?.[1] as Record<string, string>) ?? {});
    const role = asRole(roles[id]);
    if (info && role) out.push({ ...info, role });
  });
  return out.sort(
    (a, b) => Number(b.personal) - Number(a.personal) || a.name.localeCompare(b.name) || a.workspaceId.localeCompare(b.workspaceId),
  );
}

export interface MemberEntry {
  userId: string;
  role: Role;
  joined: string;
}

export async function membersOf(rm: ReadModels, workspaceId: string): Promise<MemberEntry[]> {
  const k = await rm.keys(MEMBERSHIPS);
  const res = await rm.redis
    .multi()
    .hgetall(k('ws', workspaceId, 'members'))
    .hgetall(k('ws', workspaceId, 'joined'))
    .exec();
  const roles = (res?.[0]?.[1] as Record<string, string>) ?? {};
  const joined = (res?.[1]?.[1] as Record<string, string>) ?? {};
  return Object.entries(roles)
    .map(([userId, role]) => ({ userId, role: asRole(role)!, joined: joined[userId] ?? '' }))
    .filter((m) => m.role)
    .sort((a, b) => a.joined.localeCompare(b.joined) || a.userId.localeCompare(b.userId));
}

export async function adminIdsOf(rm: ReadModels, workspaceId: string): Promise<string[]> {
  return (await membersOf(rm, workspaceId)).filter((m) => m.role === 'admin').map((m) => m.userId);
}
