import { Router } from 'express';
import type { z } from 'zod';
import { membersOf, workspaceInfo, workspacesOf } from '../projections/memberships/queries';
import { profilesOf } from '../projections/users/queries';
import type { Services } from '../../services';
import { requireMember, requireSession, userOf, workspaceOf } from '../sessions/access';
import { mount } from '../../platform/http/mount';
import { metaOf } from './common';
import * as uc from '../usecases';
import { memberBudgetViews } from './member-budget-routes';
import {
  createWorkspace,
  listMembers,
  listWorkspaces,
  memberList,
  removeMember,
  renameWorkspace,
  showWorkspace,
  workspaceList,
  workspaceSummary,
  workspaceView,
} from './schemas';

/** /v1/workspaces: create, list mine, show, rename; members: list, remove. */
export function workspaceRoutes(s: Services): Router {
  const r = Router();
  const session = requireSession(s);
  const member = requireMember(s);
  const admin = requireMember(s, { admin: true });

  mount(r, createWorkspace, session, async (_req, res, { body: { name } }) => {
    const { workspaceId } = await uc.createWorkspace(s, { name, by: userOf(res).userId, metadata: metaOf(res) });
    res
      .status(201)
      .location(`/v1/workspaces/${workspaceId}`)
      .json({ workspaceId, name, personal: false, role: 'admin' } satisfies z.input<typeof workspaceSummary>);
  });

  mount(r, listWorkspaces, session, async (_req, res) => {
    const list = await workspacesOf(s.readModels, userOf(res).userId);
    res.json({
      workspaces: list.map((w) => ({ workspaceId: w.workspaceId, name: w.name, role: w.role, personal: w.personal, created: w.created })),
    } satisfies z.input<typeof workspaceList>);
  });

  mount(r, showWorkspace, session, member, async (_req, res) => {
    const w = workspaceOf(res);
    const info = await workspaceInfo(s.readModels, w.workspaceId);
    res.json({
      workspaceId: w.workspaceId,
      name: w.name,
      role: w.role,
      personal: w.personal,
      created: info?.created ?? null,
    } satisfies z.input<typeof workspaceView>);
  });

  mount(r, renameWorkspace, session, admin, async (_req, res, { body: { name } }) => {
    const w = workspaceOf(res);
    await uc.renameWorkspace(s, { workspaceId: w.workspaceId, name, by: userOf(res).userId, metadata: metaOf(res) });
    res.json({ workspaceId: w.workspaceId, name, role: w.role, personal: w.personal } satisfies z.input<typeof workspaceSummary>);
  });

  mount(r, listMembers, session, member, async (_req, res) => {
    const w = workspaceOf(res);
    const members = await membersOf(s.readModels, w.workspaceId);
    const ids = members.map((m) => m.userId);
    const [profiles, budgets] = await Promise.all([profilesOf(s.readModels, ids), memberBudgetViews(s, w.workspaceId, ids)]);
    res.json({
      members: members.map((m) => ({
        userId: m.userId,
        email: profiles.get(m.userId)?.email ?? null,
        name: profiles.get(m.userId)?.name ?? null,
        role: m.role,
        joined: m.joined || null,
        budget: budgets.get(m.userId) ?? null,
      })),
    } satisfies z.input<typeof memberList>);
  });

  mount(r, removeMember, session, admin, async (_req, res, { params: { userId } }) => {
    await uc.removeMember(s, { workspaceId: workspaceOf(res).workspaceId, userId, by: userOf(res).userId, metadata: metaOf(res) });
    res.status(204).end();
  });

  return r;
}
