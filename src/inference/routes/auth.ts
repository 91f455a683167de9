import type { RequestHandler, Response } from 'express';
import { hashKey, KeyIndex, KeyRecord, KEY_PREFIX, keyShape, KeyShape } from '../../accounts';
import { HttpError } from '../../platform/http/middleware/errors';

/** Called with each authenticated key (the key list's "last used"); never awaited, never fails a request. */
export type OnKeyUsed = (key: KeyRecord, at: Date) => Promise<unknown>;

/** Looks a key up and counts the request in its rate-limit window in the same round trip (rate-limit.ts). */
export interface CountingLookup {
  lookupAndCount(keys: KeyIndex, keyHash: string, scope: string): Promise<{ key: KeyRecord | null; counted?: object }>;
}

/** The scope a key needs for the inference routes. */
export const INFERENCE_SCOPE = 'inference';

const BEARER = /^Bearer +(\S+) *$/i;
const CHALLENGE = { 'WWW-Authenticate': 'Bearer' };

const unauthenticated = (detail: string) => new HttpError(401, detail, CHALLENGE);

/** A key that is not in the index: unknown or deleted, mistyped (bad checksum), or not ours at all. */
const INVALID_KEY: Record<KeyShape, string> = {
  key: 'Invalid API key',
  mistyped: 'Invalid API key: it looks like a tollgate key but is mistyped or truncated (its checksum does not match)',
  foreign: `Invalid API key: this is not a tollgate key (tollgate keys start with "${KEY_PREFIX}")`,
};

/**
 * Authorization: Bearer <API_KEY> → SHA-256 → the Redis key index. Missing or malformed header,
 * unknown or deleted key, expired key → 401; a key without the `inference` scope → 403.
 * The key's record is left in res.locals.apiKey.
 *
 * With the rate limiter, the lookup also counts the request in the key's window when the record
 * alone says it will pass (one round trip for both; res.locals.rateCounted, read by the limiter).
 */
export function authenticate(keys: KeyIndex, now: () => Date, onUsed?: OnKeyUsed, limiter?: CountingLookup): RequestHandler {
  return async (req, res, next) => {
    const header = req.header('authorization');
    if (!header) throw unauthenticated('Missing API key: send the header "Authorization: Bearer <API_KEY>"');
    const m = BEARER.exec(header);
    if (!m) throw unauthenticated('Malformed Authorization header: expected "Bearer <API_KEY>"');
    const secret = m[1];
    if (secret.length > 512) throw unauthenticated('Invalid API key');
    let key: KeyRecord | null;
    try {
      if (limiter) {
        const found = await limiter.lookupAndCount(keys, hashKey(secret), INFERENCE_SCOPE);
        key = found.key;
        if (found.counted) res.locals.rateCounted = found.counted;
      } else {
        key = await keys.lookup(secret);
      }
    } catch {
      throw new HttpError(503, 'Service temporarily unavailable: keys cannot be checked', { 'Retry-After': '1' });
    }
    if (!key) throw unauthenticated(INVALID_KEY[keyShape(secret)]);
    const at = now();
    if (key.expiresAt && key.expiresAt.getTime() <= at.getTime()) {
      throw unauthenticated(key.rolledAway ? 'Invalid API key: this secret was replaced when the key was rolled' : 'API key expired');
    }
    if (!key.scopes.includes(INFERENCE_SCOPE)) throw new HttpError(403, 'Forbidden');
    if (onUsed) void onUsed(key, at).catch(() => undefined);
    res.locals.apiKey = key;
    next();
  };
}

export function apiKeyOf(res: Response): KeyRecord {
  return res.locals.apiKey as KeyRecord;
}
