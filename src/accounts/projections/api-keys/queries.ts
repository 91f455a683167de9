import type { NanoUsd } from '../../../platform/money';
import type { ReadModels } from '../../../platform/projections/read-models';
import { API_KEYS, ApiKeyListEntry, KeyRoll } from './projection';

export type { ApiKeyListEntry };

export interface ApiKeyView extends ApiKeyListEntry {
  /** Nano-USD a UTC month, or null for none. */
  monthlyBudget: NanoUsd | null;
  /** The last roll (prefix and last 4 above are then the new secret's), or null. */
  lastRoll: KeyRoll | null;
}

/** The workspace's live keys (current name, budget and secret's prefix), oldest first. */
export async function keysOf(rm: ReadModels, workspaceId: string): Promise<ApiKeyView[]> {
  const k = await rm.keys(API_KEYS);
  const res = await rm.redis.multi().hgetall(k('ws', workspaceId)).hgetall(k('ws', workspaceId, 'name')).hgetall(k('ws', workspaceId, 'budget')).hgetall(k('rolled', workspaceId)).exec();
  const [h, names, budgets, rolled] = [0, 1, 2, 3].map((i) => (res?.[i]?.[1] as Record<string, string>) ?? {});
  return Object.values(h)
    .map((v) => {
      const e = JSON.parse(v) as ApiKeyListEntry;
      const roll = rolled[e.keyId] ? (JSON.parse(rolled[e.keyId]) as KeyRoll) : null;
      return {
        ...e,
        ...(roll ? { prefix: roll.prefix, last4: roll.last4 } : {}),
        name: names[e.keyId] ?? e.name,
        monthlyBudget: budgets[e.keyId] !== undefined ? BigInt(budgets[e.keyId]) : null,
        lastRoll: roll,
      };
    })
    .sort((a, b) => a.created.localeCompare(b.created) || a.keyId.localeCompare(b.keyId));
}
