import { createHash, timingSafeEqual } from 'node:crypto';
import type { RequestHandler } from 'express';
import { HttpError } from './errors';

const digest = (v: string) => createHash('sha256').update(v).digest();

/**
 * Bearer ADMIN_TOKEN, compared in constant time. Without ADMIN_TOKEN, /admin does not exist (404).
 * A signed-in user's own token (`signedIn` says whether a bearer is one) is refused with 403: they are
 * known, but no operator; any other bearer is 401.
 */
export function requireOperator(adminToken: string | undefined, signedIn?: (token: string) => Promise<boolean>): RequestHandler {
  const expected = adminToken ? digest(adminToken) : null;
  return (req, _res, next) => {
    if (!expected) return next(new HttpError(404, 'Not Found'));
    const m = /^Bearer (.+)$/.exec(req.header('authorization') ?? '');
    if (m && timingSafeEqual(digest(m[1]), expected)) return next();
    const unauthorized = () =>
      next(new HttpError(401, 'An operator token is required: Authorization: Bearer <ADMIN_TOKEN>', { 'WWW-Authenticate': 'Bearer' }));
    if (!m || !signedIn) return unauthorized();
    signedIn(m[1]).then(
      (member) => (member ? next(new HttpError(403, 'Operators only: this route needs the operator token (ADMIN_TOKEN)')) : unauthorized()),
      next,
    );
  };
}
