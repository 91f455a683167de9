import type { Redis } from 'ioredis';
import type { NanoUsd } from '../../../platform/money';
import type { Keyspace } from '../../../platform/projections/keyspace';
import type { ReadModels } from '../../../platform/projections/read-models';
import { BALANCES } from './projection';
import { reservationKeys } from './reservations';

/** Each key's spend in a UTC month ("2026-11"), nano-USD; 0 for a key that spent nothing. */
export async function keySpend(rm: ReadModels, keyIds: string[], month: string): Promise<Map<string, NanoUsd>> {
  const out = new Map<string, NanoUsd>();
  if (!keyIds.length) return out;
  const k = await rm.keys(BALANCES);
  const p = rm.redis.pipeline();
  for (const id of keyIds) p.hget(k('key-spend', id), month);
  const res = (await p.exec()) ?? [];
  keyIds.forEach((id, i) => out.set(id, BigInt((res[i]?.[1] as string | null) ?? '0')));
  return out;
}

/** What each key's requests in flight hold (the reserve script's resv-key-total:{keyId}), nano-USD. */
export async function keyHolds(redis: Redis, ks: Keyspace, keyIds: string[]): Promise<Map<string, NanoUsd>> {
  const out = new Map<string, NanoUsd>();
  if (!keyIds.length) return out;
  const vals = await redis.mget(...keyIds.map((id) => reservationKeys((...p) => ks.shared(...p), '').keyTotalPrefix + id));
  keyIds.forEach((id, i) => out.set(id, BigInt(vals[i] ?? '0')));
  return out;
}
