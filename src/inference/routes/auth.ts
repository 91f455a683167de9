import type { Request, RequestHandler, Response } from 'express';
import { KeyIndex, KeyRecord } from '../../accounts/projections/key-index/queries';
import { KEY_PREFIX, keyShape, KeyShape } from '../../accounts/key-secrets';
import { HttpError } from '../../platform/http/middleware/errors';

/** Called with each authenticated key (the key list's "last used"); never awaited, never fails a request. */
export type OnKeyUsed = (key: KeyRecord, at: Date) => Promise<unknown>;

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

export const KEYS_UNAVAILABLE = () => new HttpError(503, 'Service temporarily unavailable: keys cannot be checked', { 'Retry-After': '1' });

/** The secret of `Authorization: Bearer <API_KEY>`; a missing or malformed header (no I/O) → 401. */
export function bearerSecret(req: Request): string {
  const header = req.header('authorization');
  if (!header) throw unauthenticated('Missing API key: send the header "Authorization: Bearer <API_KEY>"');
  const m = BEARER.exec(header);
  if (!m) throw unauthenticated('Malformed Authorization header: expected "Bearer <API_KEY>"');
  const secret = m[1];
  if (secret.length > 512) throw unauthenticated('Invalid API key');
  return secret;
}

/** 401 for a secret the index does not know, saying why as far as its shape tells. */
export const unknownKey = (secret: string) => unauthenticated(INVALID_KEY[keyShape(secret)]);

/** 401 for a key past its expiry (a rolled key's previous secret says so). */
export const expiredKey = (key: KeyRecord) =>
  unauthenticated(key.rolledAway ? 'Invalid API key: this secret was replaced when the key was rolled' : 'API key expired');

/** 403 for a key without the inference scope. */
export const forbidden = () => new HttpError(403, 'Forbidden');

/**
 * Authorization: Bearer <API_KEY> → SHA-256 → the Redis key index, for the routes that are not
 * metered (the model list). Missing or malformed header, unknown or deleted key, expired key → 401;
 * a key without the `inference` scope → 403. The key's record is left in res.locals.apiKey.
 * The metered routes check the same in their admission script (./admit.ts).
 */
export function authenticate(keys: KeyIndex, now: () => Date, onUsed?: OnKeyUsed): RequestHandler {
  return async (req, res, next) => {
    const secret = bearerSecret(req);
    let key: KeyRecord | null;
    try {
      key = await keys.lookup(secret);
    } catch {
      throw KEYS_UNAVAILABLE();
    }
    if (!key) throw unknownKey(secret);
    const at = now();
    if (key.expiresAt && key.expiresAt.getTime() <= at.getTime()) throw expiredKey(key);
    if (!key.scopes.includes(INFERENCE_SCOPE)) throw forbidden();
    if (onUsed) void onUsed(key, at).catch(() => undefined);
    res.locals.apiKey = key;
    next();
  };
}

export function apiKeyOf(res: Response): KeyRecord {
  return res.locals.apiKey as KeyRecord;
}
