import { Router } from 'express';
import type { z } from 'zod';
import { workspacesOf } from '../projections/memberships/queries';
import type { Services } from '../../services';
import { mount } from '../../platform/http/mount';
import { requireSession, userOf } from '../sessions/access';
import { requestIdOf } from './common';
import { pendingInvitationsView } from './invitation-routes';
import { readNotices } from '../notices';
import { eraseMe, exportMe, loggedIn, login, logout, me, meView, signupFor, userView } from './schemas';
import { destroySession, SESSION_COOKIE, sessionHash, sessionTokenOf } from '../sessions/sessions';
import { policyStatus } from '../policy/routes';
import { usagePolicyOf } from '../policy';
import * as uc from '../usecases';

/** POST /v1/signup, /v1/login, /v1/logout; GET /v1/me, /v1/me/export; DELETE /v1/me (erasure). */
export function authRoutes(s: Services): Router {
  const r = Router();
  // Signing up accepts the usage policy: the body names the version the user was shown.
  const signup = signupFor(usagePolicyOf(s.config).version);

  const guard = s.loginGuard;

  mount(r, signup, async (req, res, { body }) => {
    guard.refuseIfBusy();
    await guard.address(req.ip);
    const { userId } = await uc.signUp(s, guard, { ...body, correlationId: requestIdOf(res) });
    res.status(201).json({ userId, email: body.email, name: body.name } satisfies z.input<typeof userView>);
  });

  mount(r, login, async (req, res, { body }) => {
    guard.refuseIfBusy();
    await guard.address(req.ip);
    const { token, user, firstLogin } = await uc.logIn(s, guard, { ...body, correlationId: requestIdOf(res) });
    res.cookie(SESSION_COOKIE, token, {
      httpOnly: true,
      sameSite: 'lax',
      secure: s.config.COOKIE_SECURE || req.secure,
      path: '/',
      maxAge: s.config.SESSION_TTL_SECONDS * 1000,
    });
    res.json({ sessionToken: token, expiresIn: s.config.SESSION_TTL_SECONDS, user, firstLogin } satisfies z.input<typeof loggedIn>);
  });

  mount(r, logout, requireSession(s), async (req, res) => {
    const found = sessionTokenOf(req);
    if (found) {
      await destroySession(s, found.token);
      // The session's open /usage/live streams end before any later debit reaches them (in order, not on a timer).
      const user = userOf(res);
      const workspaces = await workspacesOf(s.readModels, user.userId);
      await s.liveUsage.endSession(
        workspaces.map((w) => w.workspaceId),
        user.userId,
        sessionHash(found.token),
      );
    }
    res.clearCookie(SESSION_COOKIE, { httpOnly: true, sameSite: 'lax', secure: s.config.COOKIE_SECURE || req.secure, path: '/' });
    res.status(204).end();
  });

  mount(r, me, requireSession(s), async (_req, res) => {
    const user = userOf(res);
    const [workspaces, invitations, notices, usagePolicy] = await Promise.all([
      workspacesOf(s.readModels, user.userId),
      pendingInvitationsView(s, user),
      readNotices(s, user.userId),
      policyStatus(s, user.userId),
    ]);
    res.json({
      user,
      workspaces: workspaces.map((w) => ({ workspaceId: w.workspaceId, name: w.name, role: w.role, personal: w.personal })),
      invitations,
      notices,
      usagePolicy,
    } satisfies z.input<typeof meView>);
  });

  mount(r, eraseMe, requireSession(s), async (req, res, { body }) => {
    guard.refuseIfBusy();
    await uc.eraseUser(s, guard, { userId: userOf(res).userId, password: body.password, by: 'self', correlationId: requestIdOf(res) });
    res.clearCookie(SESSION_COOKIE, { httpOnly: true, sameSite: 'lax', secure: s.config.COOKIE_SECURE || req.secure, path: '/' });
    res.status(204).end();
  });

  mount(r, exportMe, requireSession(s), async (_req, res) => {
    res.json(await uc.exportUser(s, userOf(res).userId));
  });

  return r;
}
