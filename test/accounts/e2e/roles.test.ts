import { randomUUID } from 'node:crypto';
import { startTestServer, TestServer } from '../../support/harness';
import { addMember, api, createWorkspace, fund, newUser, TestUser } from './helpers';

let server: TestServer;
let ann: TestUser; // admin of every workspace made here
let eve: TestUser; // outsider
let other: string; // eve's own team workspace

beforeAll(async () => {
  server = await startTestServer();
  [ann, eve] = await Promise.all([newUser(server, 'ann'), newUser(server, 'eve')]);
  other = await createWorkspace(server, eve, 'Elsewhere');
});
afterAll(() => server?.close());

const head = () => server.services.store.headPosition();
const setRole = (by: TestUser, ws: string, userId: string, body: unknown) =>
  api(server)
    .put(`/v1/workspaces/${ws}/members/${userId}`)
    .set(by.auth)
    .send(body as object);
const roleIn = async (who: TestUser, ws: string) =>
  ((await api(server).get('/v1/me').set(who.auth)).body.workspaces as { workspaceId: string; role: string }[]).find(
    (w) => w.workspaceId === ws,
  )?.role ?? null;

async function team(name: string, ...members: TestUser[]) {
  const ws = await createWorkspace(server, ann, name);
  for (const m of members) await addMember(server, ann, ws, m);
  return ws;
}

describe('PUT /v1/workspaces/:ws/members/:userId', () => {
  test('promote: 200, the member gets admin routes on the very next request, in /v1/me and the member list', async () => {
    const bob = await newUser(server, 'bob');
    const ws = await team('Promote', bob);
    expect((await api(server).patch(`/v1/workspaces/${ws}`).set(bob.auth).send({ name: 'x' })).status).toBe(403);
    const res = await setRole(ann, ws, bob.userId, { role: 'admin' });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ workspaceId: ws, userId: bob.userId, role: 'admin' });
    expect((await api(server).patch(`/v1/workspaces/${ws}`).set(bob.auth).send({ name: 'Renamed by Bob' })).status).toBe(200);
    expect(await roleIn(bob, ws)).toBe('admin');
    const members = await api(server).get(`/v1/workspaces/${ws}/members`).set(ann.auth);
    expect(members.body.members.map((m: { userId: string; role: string }) => [m.userId, m.role])).toEqual([
      [ann.userId, 'admin'],
      [bob.userId, 'admin'],
    ]);
  });

  test('demote: a demoted admin loses admin routes at once (403), member routes stay', async () => {
    const bob = await newUser(server, 'bob');
    const ws = await team('Demote', bob);
    await setRole(ann, ws, bob.userId, { role: 'admin' }).expect(200);
    const res = await setRole(bob, ws, ann.userId, { role: 'member' });
    expect(res.status).toBe(200);
    expect(res.body.role).toBe('member');
    // Ann is now a member: every admin route refuses her on the next request.
    expect((await api(server).patch(`/v1/workspaces/${ws}`).set(ann.auth).send({ name: 'x' })).status).toBe(403);
    expect((await api(server).post(`/v1/workspaces/${ws}/invitations`).set(ann.auth).send({ email: eve.email })).status).toBe(403);
    expect((await setRole(ann, ws, bob.userId, { role: 'member' })).status).toBe(403);
    expect((await api(server).get(`/v1/workspaces/${ws}/audit`).set(ann.auth)).status).toBe(403);
    expect((await api(server).get(`/v1/workspaces/${ws}/members`).set(ann.auth)).status).toBe(200);
    expect(await roleIn(ann, ws)).toBe('member');
  });

  test('the same role again: 200 and nothing appended', async () => {
    const bob = await newUser(server, 'bob');
    const ws = await team('Same', bob);
    const before = await head();
    expect((await setRole(ann, ws, bob.userId, { role: 'member' })).status).toBe(200);
    expect(await head()).toBe(before);
  });

  test('the last admin cannot be demoted (409), also in a personal workspace; nothing appended', async () => {
    const bob = await newUser(server, 'bob');
    const ws = await team('Last admin', bob);
    const before = await head();
    const res = await setRole(ann, ws, ann.userId, { role: 'member' });
    expect(res.status).toBe(409);
    expect(res.body.detail).toMatch(/at least one admin/);
    expect((await setRole(ann, ann.personalWs, ann.userId, { role: 'member' })).status).toBe(409);
    expect(await head()).toBe(before);
    expect(await roleIn(ann, ws)).toBe('admin');
  });

  test('bad input and the wrong people: 422 FastAPI-style, 403, 404, 401; nothing appended', async () => {
    const bob = await newUser(server, 'bob');
    const ws = await team('Refusals', bob);
    const eveMember = (await api(server).get(`/v1/workspaces/${other}/members`).set(eve.auth)).body.members[0].userId as string;
    const before = await head();
    for (const body of [{}, { role: 'owner' }, { role: 1 }, { role: null }]) {
      const res = await setRole(ann, ws, bob.userId, body);
      expect(res.status).toBe(422);
      expect(res.body.detail).toEqual([
        expect.objectContaining({ loc: ['body', 'role'], msg: 'role must be "admin" or "member"', type: expect.any(String) }),
      ]);
    }
    const notJson = await api(server)
      .put(`/v1/workspaces/${ws}/members/${bob.userId}`)
      .set(ann.auth)
      .set('Content-Type', 'application/json')
      .send('{role');
    expect(notJson.status).toBe(422);
    expect((await setRole(bob, ws, ann.userId, { role: 'member' })).body).toEqual({ detail: 'Forbidden' });
    expect((await setRole(bob, ws, bob.userId, { role: 'admin' })).status).toBe(403);
    expect((await setRole(eve, ws, bob.userId, { role: 'admin' })).body).toEqual({ detail: 'Workspace not found' });
    // A user of another workspace, or an unknown id: 404, never a hint.
    expect((await setRole(ann, ws, eveMember, { role: 'admin' })).body).toEqual({ detail: 'Member not found' });
    expect((await setRole(ann, ws, randomUUID(), { role: 'admin' })).status).toBe(404);
    expect((await setRole(ann, other, eveMember, { role: 'member' })).status).toBe(404);
    expect((await api(server).put(`/v1/workspaces/${ws}/members/${bob.userId}`).send({ role: 'admin' })).status).toBe(401);
    expect(await head()).toBe(before);
  });
});

describe('DELETE /v1/workspaces/:ws/invitations/:id', () => {
  const invite = (ws: string, who: TestUser) =>
    api(server).post(`/v1/workspaces/${ws}/invitations`).set(ann.auth).send({ email: who.email });

  test("204; it disappears from the invitee's lists at once; accepting or declining it is 409; it can be re-sent", async () => {
    const carl = await newUser(server, 'carl');
    const ws = await team('Revoke');
    const id = (await invite(ws, carl)).body.invitationId as string;
    expect((await api(server).get('/v1/invitations').set(carl.auth)).body.invitations).toHaveLength(1);
    const res = await api(server).delete(`/v1/workspaces/${ws}/invitations/${id}`).set(ann.auth);
    expect(res.status).toBe(204);
    expect((await api(server).get('/v1/invitations').set(carl.auth)).body).toEqual({ invitations: [] });
    expect((await api(server).get('/v1/me').set(carl.auth)).body.invitations).toEqual([]);
    expect((await api(server).get(`/v1/workspaces/${ws}/invitations`).set(ann.auth)).body).toEqual({ invitations: [] });
    const before = await head();
    for (const action of ['accept', 'decline']) {
      const r = await api(server).post(`/v1/invitations/${id}/${action}`).set(carl.auth);
      expect(r.status).toBe(409);
      expect(r.body).toEqual({ detail: 'This invitation was already revoked' });
    }
    expect((await api(server).get(`/v1/workspaces/${ws}`).set(carl.auth)).status).toBe(404);
    expect(await head()).toBe(before);
    expect((await invite(ws, carl)).status).toBe(201);
  });

  test("refusals: member 403, outsider 404, another workspace's invitation 404, settled 409, twice 409; nothing appended", async () => {
    const [bob, carl, dora] = await Promise.all([newUser(server, 'bob'), newUser(server, 'carl'), newUser(server, 'dora')]);
    const ws = await team('Revoke refusals', bob);
    const pending = (await invite(ws, carl)).body.invitationId as string;
    const accepted = (await invite(ws, dora)).body.invitationId as string;
    await api(server).post(`/v1/invitations/${accepted}/accept`).set(dora.auth).expect(200);
    const elsewhere = (await api(server).post(`/v1/workspaces/${other}/invitations`).set(eve.auth).send({ email: carl.email })).body
      .invitationId as string;
    const revoke = (by: TestUser, w: string, id: string) => api(server).delete(`/v1/workspaces/${w}/invitations/${id}`).set(by.auth);
    const before = await head();
    expect((await revoke(bob, ws, pending)).body).toEqual({ detail: 'Forbidden' });
    expect((await revoke(eve, ws, pending)).body).toEqual({ detail: 'Workspace not found' });
    expect((await revoke(ann, ws, elsewhere)).body).toEqual({ detail: 'Invitation not found' });
    expect((await revoke(ann, ws, randomUUID())).status).toBe(404);
    const settled = await revoke(ann, ws, accepted);
    expect(settled.status).toBe(409);
    expect(settled.body).toEqual({ detail: 'This invitation was already accepted' });
    expect(await head()).toBe(before);
    await revoke(ann, ws, pending).expect(204);
    const after = await head();
    expect((await revoke(ann, ws, pending)).body).toEqual({ detail: 'This invitation was already revoked' });
    expect(await head()).toBe(after);
    // eve's invitation to carl is untouched.
    expect(
      (await api(server).get('/v1/invitations').set(carl.auth)).body.invitations.map((i: { invitationId: string }) => i.invitationId),
    ).toEqual([elsewhere]);
  });
});

describe('POST /v1/workspaces/:ws/leave', () => {
  const leave = (who: TestUser, ws: string) => api(server).post(`/v1/workspaces/${ws}/leave`).set(who.auth);

  test('204: the member loses access at once; keys they created stay with the workspace', async () => {
    const bob = await newUser(server, 'bob');
    const ws = await team('Leaving', bob);
    await fund(server, ws);
    const key = await api(server).post(`/v1/workspaces/${ws}/keys`).set(bob.auth).send({ name: "bob's key" });
    expect(key.status).toBe(201);
    expect((await leave(bob, ws)).status).toBe(204);
    expect((await api(server).get(`/v1/workspaces/${ws}`).set(bob.auth)).status).toBe(404);
    expect(
      (await api(server).get('/v1/me').set(bob.auth)).body.workspaces.map((w: { workspaceId: string }) => w.workspaceId),
    ).not.toContain(ws);
    const members = await api(server).get(`/v1/workspaces/${ws}/members`).set(ann.auth);
    expect(members.body.members.map((m: { userId: string }) => m.userId)).toEqual([ann.userId]);
    const keys = await api(server).get(`/v1/workspaces/${ws}/keys`).set(ann.auth);
    expect(keys.body.keys.map((k: { keyId: string }) => k.keyId)).toEqual([key.body.keyId]);
    const inference = await api(server)
      .post('/external/api/inference')
      .set('Authorization', `Bearer ${key.body.secret}`)
      .send({ context: [{ type: 'Human', text: 'Hi' }], config: 'service_3_pi', max_tokens: 5 });
    expect(inference.status).toBe(200);
    // Leaving again: no longer a member.
    expect((await leave(bob, ws)).status).toBe(404);
  });

  test('an admin may leave when another admin stays', async () => {
    const bob = await newUser(server, 'bob');
    const ws = await team('Admin leaves', bob);
    await setRole(ann, ws, bob.userId, { role: 'admin' }).expect(200);
    const annToo = await newUser(server, 'ann2');
    await addMember(server, ann, ws, annToo);
    expect((await leave(bob, ws)).status).toBe(204);
    expect((await api(server).get(`/v1/workspaces/${ws}/members`).set(ann.auth)).body.members).toHaveLength(2);
  });

  test('the last admin (409), a personal workspace (409), an outsider (404), no session (401): nothing appended', async () => {
    const bob = await newUser(server, 'bob');
    const ws = await team('Stay', bob);
    const before = await head();
    const last = await leave(ann, ws);
    expect(last.status).toBe(409);
    expect(last.body.detail).toMatch(/last admin/);
    const personal = await leave(ann, ann.personalWs);
    expect(personal.status).toBe(409);
    expect(personal.body).toEqual({ detail: 'Nobody can leave their personal workspace' });
    expect((await leave(eve, ws)).body).toEqual({ detail: 'Workspace not found' });
    expect((await api(server).post(`/v1/workspaces/${ws}/leave`)).status).toBe(401);
    expect(await head()).toBe(before);
    expect((await api(server).get(`/v1/workspaces/${ws}`).set(ann.auth)).status).toBe(200);
  });
});

describe('the last admin under concurrency', () => {
  test('two admins demoting each other, or both leaving, at the same moment: exactly one admin stays', async () => {
    for (let round = 0; round < 5; round++) {
      const bob = await newUser(server, 'bob');
      const ws = await team(`Race ${round}`, bob);
      await setRole(ann, ws, bob.userId, { role: 'admin' }).expect(200);
      const race =
        round % 2
          ? [api(server).post(`/v1/workspaces/${ws}/leave`).set(ann.auth), api(server).post(`/v1/workspaces/${ws}/leave`).set(bob.auth)]
          : [setRole(ann, ws, bob.userId, { role: 'member' }), setRole(bob, ws, ann.userId, { role: 'member' })];
      const [a, b] = (await Promise.all(race)).map((r) => r.status);
      // One wins; the other finds itself demoted (403) or the last admin (409).
      const won = round % 2 ? 204 : 200;
      expect([a, b].filter((x) => x === won)).toHaveLength(1);
      expect([403, 409]).toContain([a, b].find((x) => x !== won));
      // Demoting: the winner is the admin left. Leaving: the one who did not leave.
      const survivor = round % 2 ? (a === won ? bob : ann) : a === won ? ann : bob;
      const members = (await api(server).get(`/v1/workspaces/${ws}/members`).set(survivor.auth)).body.members as { role: string }[];
      expect(members.filter((m) => m.role === 'admin')).toHaveLength(1);
    }
  });

  test('a cookie-authenticated role change without X-Requested-With or a same-site Origin: 403, nothing appended', async () => {
    const bob = await newUser(server, 'bob');
    const ws = await team('Csrf', bob);
    const before = await head();
    const res = await api(server)
      .put(`/v1/workspaces/${ws}/members/${bob.userId}`)
      .set('Cookie', `tg_session=${ann.token}`)
      .send({ role: 'admin' });
    expect(res.status).toBe(403);
    const leave = await api(server)
      .post(`/v1/workspaces/${ws}/leave`)
      .set('Cookie', `tg_session=${bob.token}`)
      .set('Origin', 'https://evil.example');
    expect(leave.status).toBe(403);
    expect(await head()).toBe(before);
  });
});
