import type { ReadModels } from '../../../platform/projections/read-models';
import { USERS } from './projection';

export interface UserProfile {
  userId: string;
  email: string;
  name: string;
  registered: string;
}

export async function profilesOf(rm: ReadModels, userIds: string[]): Promise<Map<string, UserProfile>> {
  const out = new Map<string, UserProfile>();
  if (!userIds.length) return out;
  const k = await rm.keys(USERS);
  const p = rm.redis.pipeline();
  for (const id of userIds) p.hgetall(k('user', id));
  const res = (await p.exec()) ?? [];
  userIds.forEach((id, i) => {
    const h = (res[i]?.[1] as Record<string, string>) ?? {};
    if (h.userId) out.set(id, { userId: h.userId, email: h.email, name: h.name, registered: h.registered });
  });
  return out;
}
