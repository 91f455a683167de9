import { randomUUID } from 'node:crypto';
import { addMember, api, createWorkspace, teamFixture } from './helpers';

const t = teamFixture();

const head = () => t.server.services.store.headPosition();

describe('POST /v1/workspaces', () => {
  test('201; the creator is its admin, visible on the next request', async () => {
    const res = await api(t.server).post('/v1/workspaces').set(t.eve.auth).send({ name: '  Eve Labs ' });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({ workspaceId: expect.any(String), name: 'Eve Labs', personal: false, role: 'admin' });
    expect(res.headers.location).toBe(`/v1/workspaces/${res.body.workspaceId}`);
    const got = await api(t.server).get(`/v1/workspaces/${res.body.workspaceId}`).set(t.eve.auth);
    expect(got.body).toMatchObject({ name: 'Eve Labs', role: 'admin', personal: false });
    const members = await api(t.server).get(`/v1/workspaces/${res.body.workspaceId}/members`).set(t.eve.auth);
    expect(members.body.members).toEqual([
      { userId: t.eve.userId, email: t.eve.email, name: t.eve.name, role: 'admin', joined: expect.any(String), budget: null },
    ]);
  });

  test('a blank or missing name → 422; no session → 401', async () => {
    const blank = await api(t.server).post('/v1/workspaces').set(t.eve.auth).send({ name: '   ' });
    expect(blank.status).toBe(422);
    expect(blank.body.detail[0].loc).toEqual(['body', 'name']);
    expect((await api(t.server).post('/v1/workspaces').set(t.eve.auth).send({})).status).toBe(422);
    expect((await api(t.server).post('/v1/workspaces').send({ name: 'x' })).status).toBe(401);
  });
});

describe('GET /v1/workspaces and /v1/workspaces/:ws', () => {
  test('lists my workspaces with role, personal first', async () => {
    const res = await api(t.server).get('/v1/workspaces').set(t.bob.auth);
    expect(res.status).toBe(200);
    expect(
      res.body.workspaces.map((w: { workspaceId: string; role: string; personal: boolean }) => [w.workspaceId, w.role, w.personal]),
    ).toEqual([
      [t.bob.personalWs, 'admin', true],
      [t.team, 'member', false],
    ]);
  });

  test('a member sees the workspace', async () => {
    const res = await api(t.server).get(`/v1/workspaces/${t.team}`).set(t.bob.auth);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      workspaceId: t.team,
      name: expect.any(String),
      role: 'member',
      personal: false,
      created: expect.any(String),
    });
  });

  test("another user's workspace, an unknown id and a junk id all answer the same 404", async () => {
    for (const id of [t.team, randomUUID(), 'junk', t.ann.personalWs]) {
      const res = await api(t.server).get(`/v1/workspaces/${id}`).set(t.eve.auth);
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ detail: 'Workspace not found' });
    }
  });
});

describe('PATCH /v1/workspaces/:ws', () => {
  test('the admin renames; the next request shows the new name', async () => {
    const res = await api(t.server).patch(`/v1/workspaces/${t.team}`).set(t.ann.auth).send({ name: 'Renamed Team' });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ workspaceId: t.team, name: 'Renamed Team', role: 'admin', personal: false });
    const me = await api(t.server).get('/v1/me').set(t.bob.auth);
    expect(me.body.workspaces.find((w: { workspaceId: string }) => w.workspaceId === t.team).name).toBe('Renamed Team');
  });

  test('a member → 403 Forbidden; an outsider → 404; nothing appended', async () => {
    const before = await head();
    const member = await api(t.server).patch(`/v1/workspaces/${t.team}`).set(t.bob.auth).send({ name: 'Mine' });
    expect(member.status).toBe(403);
    expect(member.body).toEqual({ detail: 'Forbidden' });
    const outsider = await api(t.server).patch(`/v1/workspaces/${t.team}`).set(t.eve.auth).send({ name: 'Mine' });
    expect(outsider.status).toBe(404);
    expect(await head()).toBe(before);
  });

  test('an invalid name → 422', async () => {
    expect(
      (
        await api(t.server)
          .patch(`/v1/workspaces/${t.team}`)
          .set(t.ann.auth)
          .send({ name: 'x'.repeat(101) })
      ).status,
    ).toBe(422);
  });

  test('the personal workspace can be renamed by its owner', async () => {
    const res = await api(t.server).patch(`/v1/workspaces/${t.eve.personalWs}`).set(t.eve.auth).send({ name: "Eve's sandbox" });
    expect(res.status).toBe(200);
    expect(res.body.personal).toBe(true);
  });
});

describe('GET /v1/workspaces/:ws/members', () => {
  test('a member lists members with roles, e-mails and names', async () => {
    const res = await api(t.server).get(`/v1/workspaces/${t.team}/members`).set(t.bob.auth);
    expect(res.status).toBe(200);
    expect(res.body.members).toEqual([
      { userId: t.ann.userId, email: t.ann.email, name: t.ann.name, role: 'admin', joined: expect.any(String), budget: null },
      { userId: t.bob.userId, email: t.bob.email, name: t.bob.name, role: 'member', joined: expect.any(String), budget: null },
    ]);
  });

  test('an outsider → 404', async () => {
    expect((await api(t.server).get(`/v1/workspaces/${t.team}/members`).set(t.eve.auth)).status).toBe(404);
  });
});

describe('DELETE /v1/workspaces/:ws/members/:userId', () => {
  test('a member → 403 Forbidden; an outsider → 404; an unknown user → 404; nothing appended', async () => {
    const ws = await createWorkspace(t.server, t.ann, 'Removals 1');
    await addMember(t.server, t.ann, ws, t.bob);
    const before = await head();
    const member = await api(t.server).delete(`/v1/workspaces/${ws}/members/${t.ann.userId}`).set(t.bob.auth);
    expect(member.status).toBe(403);
    expect(member.body).toEqual({ detail: 'Forbidden' });
    expect((await api(t.server).delete(`/v1/workspaces/${ws}/members/${t.bob.userId}`).set(t.eve.auth)).status).toBe(404);
    const unknown = await api(t.server).delete(`/v1/workspaces/${ws}/members/${t.eve.userId}`).set(t.ann.auth);
    expect(unknown.status).toBe(404);
    expect(unknown.body).toEqual({ detail: 'Member not found' });
    expect(await head()).toBe(before);
  });

  test('the admin removes a member: 204, and the removed member loses access on the very next request', async () => {
    const ws = await createWorkspace(t.server, t.ann, 'Removals 2');
    await addMember(t.server, t.ann, ws, t.bob);
    expect((await api(t.server).get(`/v1/workspaces/${ws}/keys`).set(t.bob.auth)).status).toBe(200);
    const res = await api(t.server).delete(`/v1/workspaces/${ws}/members/${t.bob.userId}`).set(t.ann.auth);
    expect(res.status).toBe(204);
    for (const path of [`/v1/workspaces/${ws}`, `/v1/workspaces/${ws}/keys`, `/v1/workspaces/${ws}/members`]) {
      const after = await api(t.server).get(path).set(t.bob.auth);
      expect(after.status).toBe(404);
      expect(after.body).toEqual({ detail: 'Workspace not found' });
    }
    expect((await api(t.server).post(`/v1/workspaces/${ws}/keys`).set(t.bob.auth).send({ name: 'sneaky' })).status).toBe(404);
    const me = await api(t.server).get('/v1/me').set(t.bob.auth);
    expect(me.body.workspaces.map((w: { workspaceId: string }) => w.workspaceId)).not.toContain(ws);
    const members = await api(t.server).get(`/v1/workspaces/${ws}/members`).set(t.ann.auth);
    expect(members.body.members.map((m: { userId: string }) => m.userId)).toEqual([t.ann.userId]);
    // Removing again: no longer a member.
    expect((await api(t.server).delete(`/v1/workspaces/${ws}/members/${t.bob.userId}`).set(t.ann.auth)).status).toBe(404);
  });

  test('the last admin cannot be removed → 409, nothing appended', async () => {
    const ws = await createWorkspace(t.server, t.ann, 'Removals 3');
    const before = await head();
    const res = await api(t.server).delete(`/v1/workspaces/${ws}/members/${t.ann.userId}`).set(t.ann.auth);
    expect(res.status).toBe(409);
    expect(res.body.detail).toMatch(/at least one admin/);
    expect(await head()).toBe(before);
  });

  test('the owner of a personal workspace cannot be removed from it → 409', async () => {
    const res = await api(t.server).delete(`/v1/workspaces/${t.ann.personalWs}/members/${t.ann.userId}`).set(t.ann.auth);
    expect(res.status).toBe(409);
    expect(res.body.detail).toMatch(/personal workspace/);
  });

  test("another workspace's member id through my workspace → 404", async () => {
    const mine = await createWorkspace(t.server, t.eve, 'Eve only');
    const res = await api(t.server).delete(`/v1/workspaces/${mine}/members/${t.bob.userId}`).set(t.eve.auth);
    expect(res.status).toBe(404);
  });
});
