import { randomUUID } from 'node:crypto';
import { addMember, api, createWorkspace, login, newUser, signup, teamFixture, TestUser, uniqueEmail } from './helpers';
import { expectMatchesContract } from '../../support/contract';
import { invite as inviteRoute, listWorkspaceInvitations, myInvitations } from '../../../src/accounts/routes/invitation-schemas';

const t = teamFixture();

const head = () => t.server.services.store.headPosition();
const invite = (by: TestUser, ws: string, email: string) =>
  api(t.server).post(`/v1/workspaces/${ws}/invitations`).set(by.auth).send({ email });

describe('POST /v1/workspaces/:ws/invitations', () => {
  test('201 pending; the invitee sees it at the next login, in GET /v1/me and GET /v1/invitations', async () => {
    const ws = await createWorkspace(t.server, t.ann, 'Inviting');
    const carl = await newUser(t.server, 'carl');
    const res = await invite(t.ann, ws, carl.email.toUpperCase());
    expect(res.status).toBe(201);
    expect(res.body).toEqual({ invitationId: expect.any(String), workspaceId: ws, email: carl.email, status: 'pending' });
    await expectMatchesContract(res, inviteRoute);

    const token = await login(t.server, carl.email);
    const expected = {
      invitationId: res.body.invitationId,
      workspaceId: ws,
      workspaceName: 'Inviting',
      email: carl.email,
      status: 'pending',
      invitedBy: { userId: t.ann.userId, name: t.ann.name, email: t.ann.email },
      created: expect.any(String),
    };
    const me = await api(t.server).get('/v1/me').set('Authorization', `Bearer ${token}`);
    expect(me.body.invitations).toEqual([expected]);
    const mine = await api(t.server).get('/v1/invitations').set('Authorization', `Bearer ${token}`);
    expect(mine.status).toBe(200);
    expect(mine.body).toEqual({ invitations: [expected] });
    await expectMatchesContract(mine, myInvitations);
    // Not a member yet.
    expect((await api(t.server).get(`/v1/workspaces/${ws}`).set('Authorization', `Bearer ${token}`)).status).toBe(404);
    // The workspace's members see the pending invitation; others see nothing.
    const wsList = await api(t.server).get(`/v1/workspaces/${ws}/invitations`).set(t.ann.auth);
    expect(wsList.body.invitations.map((i: { invitationId: string }) => i.invitationId)).toEqual([res.body.invitationId]);
    await expectMatchesContract(wsList, listWorkspaceInvitations);
    expect((await api(t.server).get('/v1/invitations').set(t.eve.auth)).body).toEqual({ invitations: [] });
    expect((await api(t.server).get(`/v1/workspaces/${ws}/invitations`).set(t.eve.auth)).status).toBe(404);
  });

  test('an invitee who signed up but never logged in sees it after the first login', async () => {
    const email = uniqueEmail('fresh');
    await signup(t.server, email);
    expect((await invite(t.ann, t.team, email)).status).toBe(201);
    const token = await login(t.server, email);
    const me = await api(t.server).get('/v1/me').set('Authorization', `Bearer ${token}`);
    expect(me.body.invitations.map((i: { workspaceId: string }) => i.workspaceId)).toEqual([t.team]);
    expect(me.body.workspaces).toHaveLength(1);
  });

  test('every illegal invitation gets a 4xx with a clear detail and appends nothing', async () => {
    const carl = await newUser(t.server, 'carl');
    const ws = await createWorkspace(t.server, t.ann, 'Strict');
    await addMember(t.server, t.ann, ws, t.bob);
    expect((await invite(t.ann, ws, carl.email)).status).toBe(201);
    const before = await head();
    const cases: [string, () => ReturnType<typeof invite>, number, string | RegExp][] = [
      ['a non-admin invites', () => invite(t.bob, ws, t.eve.email), 403, 'Forbidden'],
      ['an outsider invites', () => invite(t.eve, ws, t.eve.email), 404, 'Workspace not found'],
      ['an unknown e-mail', () => invite(t.ann, ws, uniqueEmail('ghost')), 404, /must sign up before they can be invited/],
      ['an existing member', () => invite(t.ann, ws, t.bob.email), 409, `${t.bob.email} is already a member of this workspace`],
      ['the admin themself', () => invite(t.ann, ws, t.ann.email), 409, /already a member/],
      ['a second pending invitation', () => invite(t.ann, ws, carl.email), 409, /already has a pending invitation/],
      ['into a personal workspace', () => invite(t.ann, t.ann.personalWs, carl.email), 409, /personal workspace cannot have other members/],
    ];
    for (const [what, run, status, detail] of cases) {
      const res = await run();
      expect({ what, status: res.status }).toEqual({ what, status });
      if (typeof detail === 'string') expect(res.body).toEqual({ detail });
      else expect(res.body.detail).toMatch(detail);
    }
    const bad = await invite(t.ann, ws, 'not an email');
    expect(bad.status).toBe(422);
    expect(bad.body.detail[0].loc).toEqual(['body', 'email']);
    expect(await head()).toBe(before);
  });
});

describe('POST /v1/invitations/:id/accept and /decline', () => {
  test('accept: 200, the invitee is a member at once, shares the keys, and the invitation is gone from the pending lists', async () => {
    const ws = await createWorkspace(t.server, t.ann, 'Accepting');
    const carl = await newUser(t.server, 'carl');
    const { body } = await invite(t.ann, ws, carl.email);
    const res = await api(t.server).post(`/v1/invitations/${body.invitationId}/accept`).set(carl.auth);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      invitationId: body.invitationId,
      workspaceId: ws,
      workspaceName: 'Accepting',
      status: 'accepted',
      role: 'member',
    });
    expect((await api(t.server).get(`/v1/workspaces/${ws}/keys`).set(carl.auth)).status).toBe(200);
    const me = await api(t.server).get('/v1/me').set(carl.auth);
    expect(me.body.invitations).toEqual([]);
    expect(me.body.workspaces).toContainEqual({ workspaceId: ws, name: 'Accepting', role: 'member', personal: false });
    expect((await api(t.server).get(`/v1/workspaces/${ws}/invitations`).set(t.ann.auth)).body.invitations).toEqual([]);
    const members = await api(t.server).get(`/v1/workspaces/${ws}/members`).set(t.ann.auth);
    expect(members.body.members.map((m: { userId: string; role: string }) => [m.userId, m.role])).toEqual([
      [t.ann.userId, 'admin'],
      [carl.userId, 'member'],
    ]);
    // The new member is not an admin.
    expect((await api(t.server).patch(`/v1/workspaces/${ws}`).set(carl.auth).send({ name: 'Mine' })).status).toBe(403);
  });

  test('decline: 200, not a member, gone from the pending list', async () => {
    const ws = await createWorkspace(t.server, t.ann, 'Declining');
    const carl = await newUser(t.server, 'carl');
    const { body } = await invite(t.ann, ws, carl.email);
    const res = await api(t.server).post(`/v1/invitations/${body.invitationId}/decline`).set(carl.auth);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ invitationId: body.invitationId, status: 'declined' });
    expect((await api(t.server).get(`/v1/workspaces/${ws}`).set(carl.auth)).status).toBe(404);
    expect((await api(t.server).get('/v1/invitations').set(carl.auth)).body.invitations).toEqual([]);
    // Declined people may be invited again.
    expect((await invite(t.ann, ws, carl.email)).status).toBe(201);
  });

  test('accept twice, accept after decline, decline after accept: 409, nothing appended', async () => {
    const ws = await createWorkspace(t.server, t.ann, 'Twice');
    const [carl, dora] = await Promise.all([newUser(t.server, 'carl'), newUser(t.server, 'dora')]);
    const a = (await invite(t.ann, ws, carl.email)).body.invitationId;
    const d = (await invite(t.ann, ws, dora.email)).body.invitationId;
    await api(t.server).post(`/v1/invitations/${a}/accept`).set(carl.auth).expect(200);
    await api(t.server).post(`/v1/invitations/${d}/decline`).set(dora.auth).expect(200);
    const before = await head();
    const twice = await api(t.server).post(`/v1/invitations/${a}/accept`).set(carl.auth);
    expect(twice.status).toBe(409);
    expect(twice.body).toEqual({ detail: 'This invitation was already accepted' });
    const afterDecline = await api(t.server).post(`/v1/invitations/${d}/accept`).set(dora.auth);
    expect(afterDecline.status).toBe(409);
    expect(afterDecline.body).toEqual({ detail: 'This invitation was already declined' });
    expect((await api(t.server).post(`/v1/invitations/${a}/decline`).set(carl.auth)).status).toBe(409);
    expect(await head()).toBe(before);
  });

  test("someone else's invitation or an unknown id: 404, nothing appended", async () => {
    const ws = await createWorkspace(t.server, t.ann, 'Not yours');
    const carl = await newUser(t.server, 'carl');
    const id = (await invite(t.ann, ws, carl.email)).body.invitationId;
    const before = await head();
    for (const who of [t.eve, t.ann, t.bob]) {
      const res = await api(t.server).post(`/v1/invitations/${id}/accept`).set(who.auth);
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ detail: 'Invitation not found' });
    }
    expect((await api(t.server).post(`/v1/invitations/${randomUUID()}/accept`).set(carl.auth)).status).toBe(404);
    expect((await api(t.server).post(`/v1/invitations/${id}/decline`).set(t.eve.auth)).status).toBe(404);
    expect(await head()).toBe(before);
  });

  test('a logged-out session: 401', async () => {
    const ws = await createWorkspace(t.server, t.ann, 'Logged out');
    const carl = await newUser(t.server, 'carl');
    const id = (await invite(t.ann, ws, carl.email)).body.invitationId;
    await api(t.server).post('/v1/logout').set(carl.auth).expect(204);
    expect((await api(t.server).post(`/v1/invitations/${id}/accept`).set(carl.auth)).status).toBe(401);
    expect((await api(t.server).get('/v1/invitations').set(carl.auth)).status).toBe(401);
  });

  test('a removed member can be invited again and rejoin', async () => {
    const ws = await createWorkspace(t.server, t.ann, 'Rejoin');
    const carl = await newUser(t.server, 'carl');
    await addMember(t.server, t.ann, ws, carl);
    await api(t.server).delete(`/v1/workspaces/${ws}/members/${carl.userId}`).set(t.ann.auth).expect(204);
    expect((await api(t.server).get(`/v1/workspaces/${ws}`).set(carl.auth)).status).toBe(404);
    await addMember(t.server, t.ann, ws, carl);
    expect((await api(t.server).get(`/v1/workspaces/${ws}`).set(carl.auth)).status).toBe(200);
  });
});
