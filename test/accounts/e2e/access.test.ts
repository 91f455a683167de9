import { Router } from 'express';
import { adminsOf, membershipOf, requireMember, requireSession } from '../../../src/accounts/sessions/access';
import { modules } from '../../../src/modules';
import type { Module } from '../../../src/services';
import { startTestServer, TestServer } from '../../support/harness';
import { addMember, api, createWorkspace, newUser, TestUser } from './helpers';

/** The middleware other slices (billing, usage) mount, exercised on routes of their shape. */
const probe: Module = {
  name: 'access-probe',
  router: (s) => {
    const r = Router();
    r.get('/probe/:ws/read', requireSession(s), requireMember(s), (_req, res) => {
      res.json({ user: res.locals.user, workspace: res.locals.workspace });
    });
    r.post('/probe/:ws/admin', requireSession(s), requireMember(s, { admin: true }), (_req, res) => {
      res.json({ workspace: res.locals.workspace });
    });
    r.get('/probe/:ws/roles', requireSession(s), requireMember(s), async (req, res) => {
      res.json({
        admins: await adminsOf(s, String(req.params.ws)),
        mine: await membershipOf(s, String(req.params.ws), res.locals.user.userId),
      });
    });
    return r;
  },
};

let server: TestServer;
let ann: TestUser;
let bob: TestUser;
let eve: TestUser;
let ws: string;

beforeAll(async () => {
  server = await startTestServer({}, { modules: [probe, ...modules] });
  [ann, bob, eve] = await Promise.all([newUser(server, 'ann'), newUser(server, 'bob'), newUser(server, 'eve')]);
  ws = await createWorkspace(server, ann, 'Probed');
  await addMember(server, ann, ws, bob);
});
afterAll(() => server?.close());

test('requireSession + requireMember set res.locals.user and res.locals.workspace', async () => {
  const res = await api(server).get(`/probe/${ws}/read`).set(bob.auth);
  expect(res.status).toBe(200);
  expect(res.body).toEqual({
    user: { userId: bob.userId, email: bob.email, name: bob.name },
    workspace: { workspaceId: ws, role: 'member', personal: false, name: 'Probed' },
  });
});

test('no session → 401; not a member or unknown → 404; admin required and a member → 403 Forbidden', async () => {
  expect((await api(server).get(`/probe/${ws}/read`)).status).toBe(401);
  const outsider = await api(server).get(`/probe/${ws}/read`).set(eve.auth);
  expect(outsider.status).toBe(404);
  expect(outsider.body).toEqual({ detail: 'Workspace not found' });
  expect((await api(server).post(`/probe/${ws}/admin`).set(eve.auth)).status).toBe(404);
  const member = await api(server).post(`/probe/${ws}/admin`).set(bob.auth);
  expect(member.status).toBe(403);
  expect(member.body).toEqual({ detail: 'Forbidden' });
  const admin = await api(server).post(`/probe/${ws}/admin`).set(ann.auth);
  expect(admin.status).toBe(200);
  expect(admin.body.workspace.role).toBe('admin');
});

test('cookie writes need X-Requested-With on every route that uses requireSession', async () => {
  const cookie = `tg_session=${ann.token}`;
  expect((await api(server).post(`/probe/${ws}/admin`).set('Cookie', cookie)).status).toBe(403);
  expect((await api(server).post(`/probe/${ws}/admin`).set('Cookie', cookie).set('X-Requested-With', 'XMLHttpRequest')).status).toBe(200);
  expect((await api(server).get(`/probe/${ws}/read`).set('Cookie', cookie)).status).toBe(200);
});

test('membershipOf and adminsOf', async () => {
  const res = await api(server).get(`/probe/${ws}/roles`).set(bob.auth);
  expect(res.body).toEqual({ admins: [ann.userId], mine: 'member' });
});
