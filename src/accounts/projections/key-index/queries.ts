import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';
import { Keyspace } from '../../../platform/projections/keyspace';
import { luaScript } from '../../../platform/redis-scripts';
import { KEY_FIELDS as F, KEY_INDEX, KEY_RECORD_INFIX } from './layout';

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

export const LOOKUP = luaScript('accounts/projections/key-index/lookup.lua', {
  keys: ['active'],
  args: ['recordPrefix', 'keyHash'],
  constants: { recordInfix: KEY_RECORD_INFIX },
});

export class KeyIndex {
  private readonly lookupScript: ReturnType<typeof LOOKUP.bind>;

  constructor(
    redis: Redis,
    private readonly ks: Keyspace,
  ) {
    this.lookupScript = LOOKUP.bind(redis, 'tollgateKeyLookup');
  }

  /** Where the record of a key hash lives: the active-generation key, then the prefix of the records. */
  get location(): { activeKey: string; recordPrefix: string } {
    return { activeKey: this.ks.active(KEY_INDEX), recordPrefix: this.ks.prefix + `rm:${KEY_INDEX}:` };
  }

  async lookupHash(keyHash: string): Promise<KeyRecord | null> {
    const { activeKey, recordPrefix } = this.location;
    return keyRecordOf((await this.lookupScript({ active: activeKey }, { recordPrefix, keyHash })) as string[]);
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
