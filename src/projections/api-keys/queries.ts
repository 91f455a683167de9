import type { ReadModels } from '../read-models';
import { API_KEYS, ApiKeyListEntry } from './projection';

export type { ApiKeyListEntry };

/** The workspace's live keys, oldest first. */
export async function keysOf(rm: ReadModels, workspaceId: string): Promise<ApiKeyListEntry[]> {
  const k = await rm.keys(API_KEYS);
  const h = await rm.redis.hgetall(k('ws', workspaceId));
  return Object.values(h)
    .map((v) => JSON.parse(v) as ApiKeyListEntry)
    .sort((a, b) => a.created.localeCompare(b.created) || a.keyId.localeCompare(b.keyId));
}
