import { claimStreamOf } from '../../../src/accounts/usecases/user-by-email';
import { streams } from '../../../src/platform/streams';
import { startTestServer, TestServer } from '../../support/harness';
import { api, createWorkspace, newUser, PASSWORD, uniqueEmail } from './helpers';
import { POLICY_VERSION } from '../../support/policy';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server?.close());

test('concurrent signups with one e-mail: exactly one account', async () => {
  const email = uniqueEmail('race');
  const results = await Promise.all(
    Array.from({ length: 6 }, (_, i) =>
      api(server)
        .post('/v1/signup')
        .send({ email, password: `${PASSWORD} ${i}`, name: `Racer ${i}`, acceptedPolicyVersion: POLICY_VERSION }),
    ),
  );
  const statuses = results.map((r) => r.status).sort();
  expect(statuses).toEqual([201, 409, 409, 409, 409, 409]);
  const claim = await server.services.store.readStream(claimStreamOf(server.services, email));
  expect(claim).toHaveLength(1);
  const winner = results.find((r) => r.status === 201)!;
  expect((claim[0].data as { userId: string }).userId).toBe(winner.body.userId);
  const i = Number(winner.body.name.split(' ')[1]);
  expect(
    (
      await api(server)
        .post('/v1/login')
        .send({ email, password: `${PASSWORD} ${i}` })
    ).status,
  ).toBe(200);
});

test('concurrent accepts of one invitation: one 200, the rest 409, one MemberJoined', async () => {
  const [ann, bob] = await Promise.all([newUser(server, 'ann'), newUser(server, 'bob')]);
  const ws = await createWorkspace(server, ann, 'Race');
  const id = (await api(server).post(`/v1/workspaces/${ws}/invitations`).set(ann.auth).send({ email: bob.email })).body.invitationId;
  const results = await Promise.all(Array.from({ length: 5 }, () => api(server).post(`/v1/invitations/${id}/accept`).set(bob.auth)));
  expect(results.map((r) => r.status).sort()).toEqual([200, 409, 409, 409, 409]);
  const joined = (await server.services.store.readStream(streams.workspace(ws))).filter((e) => e.type === 'MemberJoined');
  expect(joined.map((e) => (e.data as { userId: string }).userId)).toEqual([ann.userId, bob.userId]);
});

test('concurrent first logins create one personal workspace', async () => {
  const email = uniqueEmail('twice');
  await api(server)
    .post('/v1/signup')
    .send({ email, password: PASSWORD, name: 'Twice', acceptedPolicyVersion: POLICY_VERSION })
    .expect(201);
  const results = await Promise.all(Array.from({ length: 4 }, () => api(server).post('/v1/login').send({ email, password: PASSWORD })));
  expect(results.every((r) => r.status === 200)).toBe(true);
  const me = await api(server).get('/v1/me').set('Authorization', `Bearer ${results[0].body.sessionToken}`);
  expect(me.body.workspaces).toHaveLength(1);
  const ws = me.body.workspaces[0].workspaceId;
  expect((await server.services.store.readStream(streams.workspace(ws))).map((e) => e.type)).toEqual(['WorkspaceCreated', 'MemberJoined']);
});
