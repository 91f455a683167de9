import * as p from '../../../src/accounts/policy/routes/policy-schemas';
import { contractTour } from '../../support/contract';
import { startTestServer, TestServer } from '../../support/harness';
import { api, newUser, policyVersionOf } from './helpers';

/** The usage-policy routes, called for real, answer what their contracts document. */
let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server?.close());

const { conforms, missed } = contractTour();

test('the policy, and accepting it, answer as documented', async () => {
  await conforms(p.usagePolicy, await api(server).get('/v1/policies/usage'), 200);
  const u = await newUser(server, 'reader');
  await conforms(
    p.acceptPolicy,
    await api(server)
      .post('/v1/policies/usage/accept')
      .set(u.auth)
      .send({ version: policyVersionOf(server) }),
    200,
  );
  await conforms(p.acceptPolicy, await api(server).post('/v1/policies/usage/accept').set(u.auth).send({ version: 'old' }), 422);
  await conforms(
    p.acceptPolicy,
    await api(server)
      .post('/v1/policies/usage/accept')
      .send({ version: policyVersionOf(server) }),
    401,
  );
});

test('the tour called every route the policy area documents', () => {
  const notCalled = missed(p.routes);
  expect(notCalled).toEqual([]);
});
