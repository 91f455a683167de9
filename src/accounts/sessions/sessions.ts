import { createHash, randomBytes } from 'node:crypto';
import type { Request } from 'express';
import type { Services } from '../../services';

/**
 * Sessions live in Redis only, under the SHA-256 of the token (the token itself is never stored):
 *
 *   {prefix}session:{sha256hex(token)}  string: JSON {userId, email, name, created}, EX SESSION_TTL_SECONDS
 *   {prefix}sessions-of:{userId}         set: the user's session hashes (erasure ends them all), EX SESSION_TTL_SECONDS
 *
 * They are sent as `Authorization: Bearer <token>` or as the `tg_session` cookie.
 */
export const SESSION_COOKIE = 'tg_session';

export interface SessionUser {
  userId: string;
  email: string;
  name: string;
}

export const sessionHash = (token: string) => createHash('sha256').update(token).digest('hex');
const sessionKey = (s: Services, token: string) => s.ks.shared('session', sessionHash(token));
const sessionsOfKey = (s: Services, userId: string) => s.ks.shared('sessions-of', userId);

export async function createSession(s: Services, user: SessionUser): Promise<string> {
  const token = randomBytes(32).toString('base64url');
  const record = { userId: user.userId, email: user.email, name: user.name, created: s.now().toISOString() };
  const ttl = s.config.SESSION_TTL_SECONDS;
  await s.redis
    .multi()
    .set(sessionKey(s, token), JSON.stringify(record), 'EX', ttl)
    .sadd(sessionsOfKey(s, user.userId), sessionHash(token))
    .expire(sessionsOfKey(s, user.userId), ttl)
    .exec();
  return token;
}

export async function readSession(s: Services, token: string): Promise<SessionUser | null> {
  if (!token || token.length > 256) return null;
  const raw = await s.redis.get(sessionKey(s, token));
  if (!raw) return null;
  try {
    const r = JSON.parse(raw) as SessionUser;
    return { userId: r.userId, email: r.email, name: r.name };
  } catch {
    return null;
  }
}

export async function destroySession(s: Services, token: string): Promise<void> {
  await s.redis.del(sessionKey(s, token));
}

/** Ends every session of the user (erasure): their records hold the e-mail and name. */
export async function destroySessionsOf(s: Services, userId: string): Promise<void> {
  const hashes = await s.redis.smembers(sessionsOfKey(s, userId));
  await s.redis.del(sessionsOfKey(s, userId), ...hashes.map((h) => s.ks.shared('session', h)));
}

/** Where the request's session token came from, if anywhere. */
export function sessionTokenOf(req: Request): { token: string; via: 'bearer' | 'cookie' } | null {
  const auth = req.header('authorization');
  if (auth) {
    const m = /^Bearer\s+(\S+)\s*$/i.exec(auth);
    return m ? { token: m[1], via: 'bearer' } : { token: '', via: 'bearer' };
  }
  const cookie = readCookie(req.header('cookie'), SESSION_COOKIE);
  return cookie ? { token: cookie, via: 'cookie' } : null;
}

export function readCookie(header: string | undefined, name: string): string | null {
  if (!header) return null;
  for (const part of header.split(';')) {
    const i = part.indexOf('=');
    if (i < 0) continue;
    if (part.slice(0, i).trim() !== name) continue;
    const v = part.slice(i + 1).trim();
    try {
      return decodeURIComponent(v.startsWith('"') && v.endsWith('"') ? v.slice(1, -1) : v);
    } catch {
      return null;
    }
  }
  return null;
}
