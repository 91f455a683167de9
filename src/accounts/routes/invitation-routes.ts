import { Router } from 'express';
import type { z } from 'zod';
import { InvitationRecord, pendingForEmail, pendingForWorkspace } from '../projections/invitations/queries';
import { workspaceInfo } from '../projections/memberships/queries';
import { profilesOf } from '../projections/users/queries';
import type { Services } from '../../services';
import { AuthedUser, requireMember, requireSession, userOf, workspaceOf } from '../sessions/access';
import { metaOf } from './common';
import * as uc from '../usecases';
import { Throttle } from '../../platform/http/middleware/throttle';
import { mount } from '../../platform/http/mount';
import {
  acceptInvitation,
  declineInvitation,
  invitationAnswered,
  invitationList,
  invitationSent,
  invitationView,
  invite,
  listWorkspaceInvitations,
  myInvitations,
} from './invitation-schemas';

async function view(s: Services, list: InvitationRecord[]): Promise<z.input<typeof invitationView>[]> {
  const profiles = await profilesOf(s.readModels, [...new Set(list.map((i) => i.invitedBy))]);
  const names = new Map<string, string | null>();
  for (const id of new Set(list.map((i) => i.workspaceId))) names.set(id, (await workspaceInfo(s.readModels, id))?.name ?? null);
  return list.map((i) => ({
    invitationId: i.invitationId,
    workspaceId: i.workspaceId,
    workspaceName: names.get(i.workspaceId) ?? null,
    email: i.email,
    status: i.status,
    invitedBy: { userId: i.invitedBy, name: profiles.get(i.invitedBy)?.name ?? null, email: profiles.get(i.invitedBy)?.email ?? null },
    created: i.created,
  }));
}

/** The user's pending invitations, as GET /v1/invitations and GET /v1/me show them. */
export async function pendingInvitationsView(s: Services, user: AuthedUser) {
  const mine = (await pendingForEmail(s.readModels, user.email)).filter((i) => i.userId === user.userId);
  return view(s, mine);
}

/** Invite (admin), list a workspace's pending invitations (member), my invitations, accept, decline. */
export function invitationRoutes(s: Services): Router {
  const r = Router();
  const session = requireSession(s);

  // An invitation answers whether an e-mail has an account (the spec needs the invitee to have
  // one): a budget per admin keeps that from becoming an enumeration oracle.
  const invites = new Throttle(s.redis, s.ks.shared('throttle', 'invitations'), s.config.INVITATIONS_PER_ADMIN_PER_HOUR, 3600);

  mount(r, invite, session, requireMember(s, { admin: true }), async (_req, res, { body: { email } }) => {
    await invites.take(userOf(res).userId, (sec) => `Too many invitations sent; retry in ${sec} s`);
    const w = workspaceOf(res);
    const { invitationId } = await uc.sendInvitation(s, {
      workspaceId: w.workspaceId,
      email,
      by: userOf(res).userId,
      metadata: metaOf(res),
    });
    res.status(201).json({ invitationId, workspaceId: w.workspaceId, email, status: 'pending' } satisfies z.input<typeof invitationSent>);
  });

  mount(r, listWorkspaceInvitations, session, requireMember(s), async (_req, res) => {
    res.json({ invitations: await view(s, await pendingForWorkspace(s.readModels, workspaceOf(res).workspaceId)) } satisfies z.input<
      typeof invitationList
    >);
  });

  mount(r, myInvitations, session, async (_req, res) => {
    res.json({ invitations: await pendingInvitationsView(s, userOf(res)) } satisfies z.input<typeof invitationList>);
  });

  for (const [action, contract] of [
    ['accept', acceptInvitation],
    ['decline', declineInvitation],
  ] as const) {
    mount(r, contract, session, async (_req, res, { params: { id } }) => {
      const answer = action === 'accept' ? uc.acceptInvitation : uc.declineInvitation;
      const a = await answer(s, { invitationId: id, userId: userOf(res).userId, metadata: metaOf(res) });
      res.json({
        invitationId: a.invitationId,
        workspaceId: a.workspaceId,
        workspaceName: a.workspaceName,
        status: action === 'accept' ? 'accepted' : 'declined',
        ...(action === 'accept' ? { role: a.role } : {}),
      } satisfies z.input<typeof invitationAnswered>);
    });
  }

  return r;
}
