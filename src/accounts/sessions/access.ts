import type { RequestHandler } from 'express';
import type { Role } from '../events';
import { adminIdsOf, membership, roleOf } from '../projections/memberships/queries';
import type { Services } from '../../services';
import { HttpError } from '../../platform/http/middleware/errors';
import { readSession, sessionTokenOf, SessionUser } from './sessions';

/**
 * Authorization for the /v1 account API — a stable contract other slices (billing, usage) build on.
 *
 *   mount(router, showBilling, requireSession(s), requireMember(s), handler)   // GET /v1/workspaces/:ws/billing
 *   mount(router, makeDeposit, requireSession(s), requireMember(s, { admin: true }), handler)   // POST …/billing/deposits
 *
 * - requireSession: 401 {"detail": "..."} without a valid session; sets res.locals.user.
 *   A write (not GET/HEAD/OPTIONS) authenticated by the session cookie (not the bearer header) must
 *   also carry `X-Requested-With` (any value) or an `Origin` equal to the request's own origin
 *   (scheme, host and port),
 *   else 403: a cross-site form cannot set either (CSRF).
 * - requireMember: for routes with `:ws`. 404 {"detail":"Workspace not found"} when the workspace is
 *   unknown or the user is not a member (ids cannot be probed); 403 {"detail":"Forbidden"} when
 *   admin is required and the user is only a member; sets res.locals.workspace.
 */

export interface AuthedUser {
  userId: string;
  email: string;
  name: string;
}

export interface WorkspaceAccess {
  workspaceId: string;
  role: Role;
  personal: boolean;
  name: string;
}

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

export function requireSession(s: Services): RequestHandler {
  return async (req, res, next) => {
    const found = sessionTokenOf(req);
    if (!found) throw new HttpError(401, 'Not authenticated: log in and send Authorization: Bearer <sessionToken>');
    // An Authorization header that is not "Bearer <token>" (the token alone, say) is named as such,
    // as on the inference routes, rather than taken for an expired session.
    if (found.via === 'bearer' && !found.token)
      throw new HttpError(401, 'Malformed Authorization header: expected "Bearer <sessionToken>"');
    const user: SessionUser | null = await readSession(s, found.token);
    if (!user) throw new HttpError(401, 'Invalid or expired session: log in again');
    if (found.via === 'cookie' && !SAFE_METHODS.has(req.method) && !sameOriginOrXhr(req)) {
      throw new HttpError(403, 'Cookie-authenticated writes need the X-Requested-With header (or a same-origin Origin)');
    }
    res.locals.user = { userId: user.userId, email: user.email, name: user.name } satisfies AuthedUser;
    res.locals.sessionVia = found.via;
    next();
  };
}

function sameOriginOrXhr(req: import('express').Request): boolean {
  if (req.header('x-requested-with')) return true;
  const origin = req.header('origin');
  const host = req.header('host');
  if (!origin || !host) return false;
  try {
    // Scheme, host and port: https://host is another origin than the http://host serving this.
    return new URL(origin).origin === new URL(`${req.protocol}://${host}`).origin;
  } catch {
    return false;
  }
}

/** Only for routes with a `:ws` parameter, after requireSession. */
export function requireMember(s: Services, opts: { admin?: boolean } = {}): RequestHandler {
  return async (req, res, next) => {
    const user = res.locals.user as AuthedUser | undefined;
    if (!user) throw new HttpError(401, 'Not authenticated: log in and send Authorization: Bearer <sessionToken>');
    const ws = String(req.params.ws ?? '');
    const m = ws && ws.length <= 64 ? await membership(s.readModels, ws, user.userId) : null;
    if (!m) throw new HttpError(404, 'Workspace not found');
    if (opts.admin && m.role !== 'admin') throw new HttpError(403, 'Forbidden');
    res.locals.workspace = { workspaceId: m.workspaceId, role: m.role, personal: m.personal, name: m.name } satisfies WorkspaceAccess;
    next();
  };
}

/** The user's role in the workspace, or null when not a member (or no such workspace). */
export function membershipOf(s: Services, workspaceId: string, userId: string): Promise<Role | null> {
  return roleOf(s.readModels, workspaceId, userId);
}

/** User ids of the workspace's admins (billing notices go to them). */
export function adminsOf(s: Services, workspaceId: string): Promise<string[]> {
  return adminIdsOf(s.readModels, workspaceId);
}

export const userOf = (res: { locals: Record<string, unknown> }) => res.locals.user as AuthedUser;
export const workspaceOf = (res: { locals: Record<string, unknown> }) => res.locals.workspace as WorkspaceAccess;
