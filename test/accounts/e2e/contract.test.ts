import * as a from '../../../src/accounts/routes/schemas';
import { auditLog } from '../../../src/accounts/routes/audit-schemas';
import * as inv from '../../../src/accounts/routes/invitation-schemas';
import * as k from '../../../src/accounts/routes/key-schemas';
import { setMemberBudget } from '../../../src/accounts/routes/member-budget-schemas';
import { contractTour } from '../../support/contract';
import { startTestServer, TestServer } from '../../support/harness';
import { api, createWorkspace, fund, newUser, PASSWORD, policyVersionOf, uniqueEmail } from './helpers';

/**
 * Every accounts route, called for real, answers what its contract documents: each status it is
 * called into (successes and the usual refusals) and each body, field for field.
 */
let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server?.close());

const { conforms, missed } = contractTour();

test('users, sessions, workspaces, members and invitations answer as documented', async () => {
  const email = uniqueEmail('tour');
  await conforms(
    a.signup,
    await api(server)
      .post('/v1/signup')
      .send({ email, password: PASSWORD, name: 'Tour', acceptedPolicyVersion: policyVersionOf(server) }),
    201,
  );
  await conforms(
    a.signup,
    await api(server)
      .post('/v1/signup')
      .send({ email, password: PASSWORD, name: 'Tour', acceptedPolicyVersion: policyVersionOf(server) }),
    409,
  );
  await conforms(a.signup, await api(server).post('/v1/signup').send({ email: 'nope', password: 'short' }), 422);
  const login = await api(server).post('/v1/login').send({ email, password: PASSWORD });
  await conforms(a.login, login, 200);
  await conforms(a.login, await api(server).post('/v1/login').send({ email, password: 'wrong password' }), 401);
  await conforms(a.login, await api(server).post('/v1/login').send({}), 422);
  const auth = { Authorization: `Bearer ${login.body.sessionToken}` };

  await conforms(a.me, await api(server).get('/v1/me').set(auth), 200);
  await conforms(a.me, await api(server).get('/v1/me'), 401);

  const created = await api(server).post('/v1/workspaces').set(auth).send({ name: 'Tour team' });
  await conforms(a.createWorkspace, created, 201);
  await conforms(a.createWorkspace, await api(server).post('/v1/workspaces').set(auth).send({ name: '' }), 422);
  const ws = created.body.workspaceId as string;
  await conforms(a.listWorkspaces, await api(server).get('/v1/workspaces').set(auth), 200);
  await conforms(a.showWorkspace, await api(server).get(`/v1/workspaces/${ws}`).set(auth), 200);
  await conforms(a.showWorkspace, await api(server).get('/v1/workspaces/unknown').set(auth), 404);
  await conforms(a.renameWorkspace, await api(server).patch(`/v1/workspaces/${ws}`).set(auth).send({ name: 'Renamed' }), 200);

  const bob = await newUser(server, 'bob');
  const sent = await api(server).post(`/v1/workspaces/${ws}/invitations`).set(auth).send({ email: bob.email });
  await conforms(inv.invite, sent, 201);
  await conforms(inv.invite, await api(server).post(`/v1/workspaces/${ws}/invitations`).set(auth).send({ email: bob.email }), 409);
  await conforms(
    inv.invite,
    await api(server)
      .post(`/v1/workspaces/${ws}/invitations`)
      .set(auth)
      .send({ email: uniqueEmail('nobody') }),
    404,
  );
  await conforms(inv.listWorkspaceInvitations, await api(server).get(`/v1/workspaces/${ws}/invitations`).set(auth), 200);
  await conforms(inv.myInvitations, await api(server).get('/v1/invitations').set(bob.auth), 200);
  await conforms(a.me, await api(server).get('/v1/me').set(bob.auth), 200);
  await conforms(inv.acceptInvitation, await api(server).post(`/v1/invitations/${sent.body.invitationId}/accept`).set(bob.auth), 200);
  await conforms(inv.acceptInvitation, await api(server).post(`/v1/invitations/${sent.body.invitationId}/accept`).set(bob.auth), 409);

  const carl = await newUser(server, 'carl');
  const second = await api(server).post(`/v1/workspaces/${ws}/invitations`).set(auth).send({ email: carl.email });
  await conforms(inv.declineInvitation, await api(server).post(`/v1/invitations/${second.body.invitationId}/decline`).set(carl.auth), 200);
  await conforms(inv.declineInvitation, await api(server).post('/v1/invitations/unknown/decline').set(carl.auth), 404);
  const third = await api(server).post(`/v1/workspaces/${ws}/invitations`).set(auth).send({ email: carl.email });
  await conforms(
    inv.revokeInvitation,
    await api(server).delete(`/v1/workspaces/${ws}/invitations/${third.body.invitationId}`).set(auth),
    204,
  );

  await conforms(a.listMembers, await api(server).get(`/v1/workspaces/${ws}/members`).set(bob.auth), 200);
  await conforms(
    setMemberBudget,
    await api(server).put(`/v1/workspaces/${ws}/members/${bob.userId}/budget`).set(bob.auth).send({ budget: '5', period: 'daily' }),
    403,
  );
  await conforms(
    setMemberBudget,
    await api(server).put(`/v1/workspaces/${ws}/members/${bob.userId}/budget`).set(auth).send({ budget: '5', period: 'hourly' }),
    422,
  );
  await conforms(
    setMemberBudget,
    await api(server).put(`/v1/workspaces/${ws}/members/${bob.userId}/budget`).set(auth).send({ budget: '5', period: 'daily' }),
    200,
  );
  await conforms(a.listMembers, await api(server).get(`/v1/workspaces/${ws}/members`).set(bob.auth), 200);
  await conforms(
    a.changeRole,
    await api(server).put(`/v1/workspaces/${ws}/members/${bob.userId}`).set(bob.auth).send({ role: 'admin' }),
    403,
  );
  await conforms(a.changeRole, await api(server).put(`/v1/workspaces/${ws}/members/${bob.userId}`).set(auth).send({ role: 'owner' }), 422);
  await conforms(a.changeRole, await api(server).put(`/v1/workspaces/${ws}/members/${bob.userId}`).set(auth).send({ role: 'admin' }), 200);
  await conforms(a.leaveWorkspace, await api(server).post(`/v1/workspaces/${ws}/leave`).set(bob.auth), 204);
  await conforms(a.removeMember, await api(server).delete(`/v1/workspaces/${ws}/members/${created.body.workspaceId}`).set(auth), 404);
  await conforms(a.leaveWorkspace, await api(server).post(`/v1/workspaces/${ws}/leave`).set(auth), 409);

  const dana = await newUser(server, 'dana');
  const fourth = await api(server).post(`/v1/workspaces/${ws}/invitations`).set(auth).send({ email: dana.email });
  await api(server).post(`/v1/invitations/${fourth.body.invitationId}/accept`).set(dana.auth).expect(200);
  await conforms(a.removeMember, await api(server).delete(`/v1/workspaces/${ws}/members/${dana.userId}`).set(auth), 204);

  await conforms(a.logout, await api(server).post('/v1/logout').set(auth), 204);
  await conforms(a.logout, await api(server).post('/v1/logout').set(auth), 401);
});

test('keys and the audit log answer as documented', async () => {
  const ann = await newUser(server, 'ann');
  const ws = await createWorkspace(server, ann, 'Keys');
  await conforms(k.createKey, await api(server).post(`/v1/workspaces/${ws}/keys`).set(ann.auth).send({ name: 'unfunded' }), 402);
  await fund(server, ws);
  const key = await api(server).post(`/v1/workspaces/${ws}/keys`).set(ann.auth).send({ name: 'ci key', expiresAt: '2999-01-01T00:00:00Z' });
  await conforms(k.createKey, key, 201);
  await conforms(
    k.createKey,
    await api(server).post(`/v1/workspaces/${ws}/keys`).set(ann.auth).send({ name: 'x', expiresAt: '2000-01-01T00:00:00Z' }),
    422,
  );
  await conforms(
    k.updateKey,
    await api(server).patch(`/v1/workspaces/${ws}/keys/${key.body.keyId}`).set(ann.auth).send({ monthlyBudget: '25' }),
    200,
  );
  await conforms(
    k.updateKey,
    await api(server).patch(`/v1/workspaces/${ws}/keys/${key.body.keyId}`).set(ann.auth).send({ budget: '5', budgetPeriod: 'weekly' }),
    200,
  );
  await conforms(
    k.updateKey,
    await api(server).patch(`/v1/workspaces/${ws}/keys/${key.body.keyId}`).set(ann.auth).send({ budgetPeriod: 'hourly' }),
    422,
  );
  await conforms(k.updateKey, await api(server).patch(`/v1/workspaces/${ws}/keys/${key.body.keyId}`).set(ann.auth).send({}), 422);
  await conforms(k.keyBudgets, await api(server).get(`/v1/workspaces/${ws}/keys/${key.body.keyId}/budgets`).set(ann.auth), 200);
  await conforms(k.keyBudgets, await api(server).get(`/v1/workspaces/${ws}/keys/unknown/budgets`).set(ann.auth), 404);
  await conforms(
    k.rollKey,
    await api(server).post(`/v1/workspaces/${ws}/keys/${key.body.keyId}/roll`).set(ann.auth).send({ gracePeriodSeconds: 60 }),
    200,
  );
  await conforms(k.rollKey, await api(server).post(`/v1/workspaces/${ws}/keys/unknown/roll`).set(ann.auth).send({}), 404);
  await conforms(k.listKeys, await api(server).get(`/v1/workspaces/${ws}/keys`).set(ann.auth), 200);
  await conforms(k.deleteKey, await api(server).delete(`/v1/workspaces/${ws}/keys/${key.body.keyId}`).set(ann.auth), 204);
  await conforms(k.deleteKey, await api(server).delete(`/v1/workspaces/${ws}/keys/${key.body.keyId}`).set(ann.auth), 404);

  await conforms(auditLog, await api(server).get(`/v1/workspaces/${ws}/audit?limit=3`).set(ann.auth), 200);
  await conforms(auditLog, await api(server).get(`/v1/workspaces/${ws}/audit?format=csv`).set(ann.auth), 200);
  await conforms(auditLog, await api(server).get(`/v1/workspaces/${ws}/audit?limit=0`).set(ann.auth), 422);
});

test('export and erasure answer as documented', async () => {
  const eve = await newUser(server, 'eve');
  await conforms(a.exportMe, await api(server).get('/v1/me/export').set(eve.auth), 200);
  await conforms(a.eraseMe, await api(server).delete('/v1/me').set(eve.auth).send({ password: 'wrong password' }), 403);
  await conforms(a.eraseMe, await api(server).delete('/v1/me').set(eve.auth).send({}), 422);
  await conforms(a.eraseMe, await api(server).delete('/v1/me').set(eve.auth).send({ password: PASSWORD }), 204);
  await conforms(a.exportMe, await api(server).get('/v1/me/export').set(eve.auth), 401);
});

test('the tour called every route the accounts area documents', () => {
  const notCalled = missed(a.routes);
  expect(notCalled).toEqual([]);
});
