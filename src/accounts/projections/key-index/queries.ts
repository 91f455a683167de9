import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';
import { Keyspace } from '../../../platform/projections/keyspace';
import { ActiveGenerations, type MsClock } from '../../../platform/projections/read-models';
import { KEY_FIELDS as F, KEY_INDEX, keyIndexParts } from './layout';

export interface KeyRecord {
  keyId: string;
  workspaceId: string;
  name: string;
  scopes: string[];
  expiresAt: Date | null;
  /** Requests per minute when an operator changed it; null means the default. */
  rateLimit: number | null;
  /** Set on a rolled key's previous secret, which works until expiresAt (the grace period's end). */
  rolledAway?: true;
}

export function hashKey(secret: string): string {
  return createHash('sha256').update(secret).digest('hex');
}

export class KeyIndex {
  private readonly gens: ActiveGenerations;

  constructor(
    private readonly redis: Redis,
    private readonly ks: Keyspace,
    /** The process's clock (Services.now), which the generation cache ages on. */
    now: MsClock = Date.now,
  ) {
    this.gens = new ActiveGenerations(redis, ks, now);
  }

  /**
   * The record of a key hash: one HGETALL in the generation last seen active (the records are under
   * the key index's own hash tag). A hash found nowhere reads the pointer again: if a rebuild
   * switched the generation, the lookup is made again in the new one.
   */
  async lookupHash(keyHash: string): Promise<KeyRecord | null> {
    for (;;) {
      const gen = await this.gens.get(KEY_INDEX);
      const found = keyRecordOf(
        (await this.redis.call('HGETALL', this.ks.rm(KEY_INDEX, gen, ...keyIndexParts.record(keyHash)))) as string[],
      );
      if (found || !(await this.gens.moved(KEY_INDEX))) return found;
    }
  }

  lookup(secret: string): Promise<KeyRecord | null> {
    return this.lookupHash(hashKey(secret));
  }
}

/** A key record from its hash's fields as HGETALL returns them (field, value, …); null if none. */
export function keyRecordOf(flat: string[]): KeyRecord | null {
  if (!flat.length) return null;
  const h: Record<string, string> = {};
  for (let i = 0; i < flat.length; i += 2) h[flat[i]] = flat[i + 1];
  return {
    keyId: h[F.keyId],
    workspaceId: h[F.workspaceId],
    name: h[F.name],
    scopes: h[F.scopes] ? h[F.scopes].split(',') : [],
    expiresAt: h[F.expiresAt] ? new Date(h[F.expiresAt]) : null,
    rateLimit: h[F.rateLimit] ? Number(h[F.rateLimit]) : null,
    ...(h[F.rolledAway] ? { rolledAway: true as const } : {}),
  };
}
