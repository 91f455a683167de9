import type { ReadModels } from '../../../platform/projections/read-models';
import { INVITATIONS } from './projection';

export interface InvitationRecord {
  invitationId: string;
  workspaceId: string;
  email: string;
  userId: string;
  invitedBy: string;
  status: 'pending' | 'accepted' | 'declined' | 'revoked';
  created: string;
  settled: string | null;
}

function toRecord(h: Record<string, string>): InvitationRecord | null {
  if (!h.invitationId) return null;
  return {
    invitationId: h.invitationId,
    workspaceId: h.workspaceId,
    email: h.email,
    userId: h.userId,
    invitedBy: h.invitedBy,
    status: h.status as InvitationRecord['status'],
    created: h.created,
    settled: h.settled || null,
  };
}

export async function invitation(rm: ReadModels, invitationId: string): Promise<InvitationRecord | null> {
  const k = await rm.keys(INVITATIONS);
  return toRecord(await rm.redis.hgetall(k('inv', invitationId)));
}

async function many(rm: ReadModels, ids: string[]): Promise<InvitationRecord[]> {
  if (!ids.length) return [];
  const k = await rm.keys(INVITATIONS);
  const p = rm.redis.pipeline();
  for (const id of ids) p.hgetall(k('inv', id));
  const res = (await p.exec()) ?? [];
  return res
    .map(([, h]) => toRecord((h as Record<string, string>) ?? {}))
    .filter((r): r is InvitationRecord => r !== null && r.status === 'pending')
    .sort((a, b) => a.created.localeCompare(b.created));
}

/** Pending invitations addressed to this (normalized) e-mail, oldest first. */
export async function pendingForEmail(rm: ReadModels, email: string): Promise<InvitationRecord[]> {
  const k = await rm.keys(INVITATIONS);
  return many(rm, await rm.redis.hkeys(k('email', email)));
}

export async function pendingForWorkspace(rm: ReadModels, workspaceId: string): Promise<InvitationRecord[]> {
  const k = await rm.keys(INVITATIONS);
  return many(rm, await rm.redis.hkeys(k('ws', workspaceId)));
}
