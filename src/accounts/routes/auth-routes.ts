import { Router } from 'express';
import type { z } from 'zod';
import { decideClaimEmail, decideUser, emailClaimDecider, normalizeEmail, personalWorkspaceId, userDecider } from '../user';
import { decideWorkspace, workspaceDecider } from '../workspace';
import { DomainError } from '../../platform/errors';
import { streams } from '../../platform/streams';
import { handleCommand, loadState } from '../../platform/eventstore/command-handler';
import { workspacesOf } from '../projections/memberships/queries';
import type { Services } from '../../services';
import { validate } from '../../platform/http/contract';
import { HttpError } from '../../platform/http/middleware/errors';
import { requireSession, userOf } from '../sessions/access';
import { metaOf, settle } from './common';
import { pendingInvitationsView } from './invitation-routes';
import { readNotices } from '../notices';
import { dummyPasswordHash, hashPassword, verifyPassword } from '../sessions/passwords';
import { loggedIn, login, logout, me, meView, signupFor, userView } from './schemas';
import { createSession, destroySession, SESSION_COOKIE, sessionTokenOf } from '../sessions/sessions';
import { policyAccepted, usagePolicyOf } from '../../policy';
import { policyStatus } from '../../policy/routes';

const INVALID_LOGIN = 'Invalid e-mail or password';
export const PERSONAL_WORKSPACE_NAME = 'Personal';

/** POST /v1/signup, /v1/login, /v1/logout; GET /v1/me. */
export function authRoutes(s: Services): Router {
  const r = Router();
  // Signing up accepts the usage policy: the body names the version the user was shown.
  const signup = signupFor(usagePolicyOf(s.config).version);

  const guard = s.loginGuard;

  r.post(signup.path, async (req, res) => {
    const { email, password, name, acceptedPolicyVersion } = validate(signup, req).body;
    guard.refuseIfBusy();
    await guard.address(req.ip);
    const passwordHash = await guard.hash(() => hashPassword(password));
    let userId = s.newId();
    const meta = () => metaOf(res, userId);
    const claimStream = streams.email(email);
    const claim = await loadState(s.store, claimStream, emailClaimDecider);
    if (claim.state.claimedBy !== null) {
      // A claim whose registration never happened (a crash between the two appends) is taken over.
      const owner = await loadState(s.store, streams.user(claim.state.claimedBy), userDecider);
      if (owner.state.registered) throw new DomainError('conflict', 'An account with this e-mail already exists');
      userId = claim.state.claimedBy;
    } else {
      await handleCommand(s.store, claimStream, emailClaimDecider, (st) => ({ events: decideClaimEmail(st, { email, userId }), result: undefined }), {
        metadata: meta(),
        newId: s.newId,
      });
    }
    const registered = await handleCommand(
      s.store,
      streams.user(userId),
      userDecider,
      (st) => ({
        events: [...decideUser(st, { type: 'RegisterUser', data: { userId, email, name, passwordHash } }).events, policyAccepted(userId, acceptedPolicyVersion)],
        result: undefined,
      }),
      { metadata: meta(), newId: s.newId },
    );
    await settle(s, registered.appended);
    res.status(201).json({ userId, email, name } satisfies z.input<typeof userView>);
  });

  r.post(login.path, async (req, res) => {
    const parsed = validate(login, req).body;
    const email = normalizeEmail(parsed.email);
    guard.refuseIfBusy();
    await guard.address(req.ip);
    await guard.email(email);
    const claim = await loadState(s.store, streams.email(email), emailClaimDecider);
    const user = claim.state.claimedBy ? (await loadState(s.store, streams.user(claim.state.claimedBy), userDecider)).state : null;
    // The same scrypt runs whether or not the e-mail has an account.
    const stored = user?.registered ? user.passwordHash : await dummyPasswordHash();
    const ok = await guard.hash(() => verifyPassword(parsed.password, stored));
    if (!ok || !user?.registered) throw new HttpError(401, INVALID_LOGIN);
    await guard.succeeded(email);

    const userId = user.userId;
    const metadata = metaOf(res, userId);
    let created;
    if (user.logins === 0) {
      // The first login creates the personal workspace (idempotent: its id derives from the user's).
      const wsId = personalWorkspaceId(userId);
      created = await handleCommand(
        s.store,
        streams.workspace(wsId),
        workspaceDecider,
        (st) => ({
          events: decideWorkspace(st, { type: 'EnsurePersonalWorkspace', data: { workspaceId: wsId, name: PERSONAL_WORKSPACE_NAME, by: userId } }),
          result: undefined,
        }),
        { metadata, newId: s.newId },
      );
    }
    const recorded = await handleCommand(
      s.store,
      streams.user(userId),
      userDecider,
      (st) => {
        const d = decideUser(st, { type: 'RecordLogin', data: { userId } });
        return { events: d.events, result: d.firstLogin };
      },
      { metadata, newId: s.newId },
    );
    await settle(s, created?.appended, recorded.appended);
    const token = await createSession(s, { userId, email: user.email, name: user.name });
    res.cookie(SESSION_COOKIE, token, {
      httpOnly: true,
      sameSite: 'lax',
      secure: s.config.COOKIE_SECURE || req.secure,
      path: '/',
      maxAge: s.config.SESSION_TTL_SECONDS * 1000,
    });
    res.json({
      sessionToken: token,
      expiresIn: s.config.SESSION_TTL_SECONDS,
      user: { userId, email: user.email, name: user.name },
      firstLogin: recorded.result,
    } satisfies z.input<typeof loggedIn>);
  });

  r.post(logout.path, requireSession(s), async (req, res) => {
    const found = sessionTokenOf(req);
    if (found) await destroySession(s, found.token);
    res.clearCookie(SESSION_COOKIE, { httpOnly: true, sameSite: 'lax', secure: s.config.COOKIE_SECURE || req.secure, path: '/' });
    res.status(204).end();
  });

  r.get(me.path, requireSession(s), async (_req, res) => {
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

  return r;
}
