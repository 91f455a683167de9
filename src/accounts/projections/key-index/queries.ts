import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';
import { Keyspace } from '../../../platform/projections/keyspace';
import { ActiveGenerations, type MsClock } from '../../../platform/projections/read-models';
import { luaScript } from '../../../platform/redis-scripts';
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

/** How many times a lookup follows a generation that moved under it before it gives up. */
const SWITCHES_FOLLOWED = 5;

export const LOOKUP = luaScript('accounts/projections/key-index/lookup.lua', { keys: ['active', 'record'], args: ['gen'] });

export class KeyIndex {
  private readonly gens: ActiveGenerations;
  private readonly script: ReturnType<typeof LOOKUP.bind>;

  constructor(
    private readonly redis: Redis,
    private readonly ks: Keyspace,
    /** The process's clock (Services.now), which the generation cache ages on. */
    now: MsClock = Date.now,
  ) {
    this.gens = new ActiveGenerations(redis, ks, now);
    this.script = LOOKUP.bind(redis, 'tollgateKeyLookup');
  }

  /**
   * The record of a key hash: one script, in the generation last seen active (the pointer and the
   * records share the key index's hash tag). The script reads the pointer too and answers only in
   * the generation active now, so a key deleted after a rebuild switched the generation is not found
   * in the replaced one while a cache still names it (a deleted key must fail at once).
   */
  async lookupHash(keyHash: string): Promise<KeyRecord | null> {
    let gen = await this.gens.get(KEY_INDEX);
    for (let i = 0; ; i++) {
      const record = this.ks.rm(KEY_INDEX, gen, ...keyIndexParts.record(keyHash));
      const [active, flat] = (await this.script({ active: this.ks.active(KEY_INDEX), record }, { gen })) as [string, string[]?];
      if (active === gen) return keyRecordOf(flat ?? []);
      if (i >= SWITCHES_FOLLOWED) throw new Error(`key index: its generation kept switching (last ${active})`);
      this.gens.saw(KEY_INDEX, active);
      gen = active;
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
