import * as p from '../../../src/api/policy/schemas';
import type { RouteContract } from '../../../src/api/contract';
import { expectMatchesContract, type Answer } from '../../support/contract';
import { startTestServer, TestServer } from '../../support/harness';
import { api, newUser, policyVersionOf } from '../accounts/helpers';

/** The usage-policy routes, called for real, answer what their contracts document. */
let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server?.close());

const checked = new Set<RouteContract>();
/** The answer has the status the tour expects, and matches the contract. */
async function conforms(contract: RouteContract, res: Answer & { text: string }, status: number) {
  checked.add(contract);
  if (res.status !== status) throw new Error(`${contract.method.toUpperCase()} ${contract.path}: ${res.status} where ${status} was due: ${res.text}`);
  return expectMatchesContract(res, contract);
}

test('the policy, and accepting it, answer as documented', async () => {
  await conforms(p.usagePolicy, await api(server).get('/v1/policies/usage'), 200);
  const u = await newUser(server, 'reader');
  await conforms(p.acceptPolicy, await api(server).post('/v1/policies/usage/accept').set(u.auth).send({ version: policyVersionOf(server) }), 200);
  await conforms(p.acceptPolicy, await api(server).post('/v1/policies/usage/accept').set(u.auth).send({ version: 'old' }), 422);
  await conforms(p.acceptPolicy, await api(server).post('/v1/policies/usage/accept').send({ version: policyVersionOf(server) }), 401);
});

test('the tour called every route the policy area documents', () => {
  const missed = p.routes.filter((c) => !checked.has(c)).map((c) => `${c.method.toUpperCase()} ${c.path}`);
  expect(missed).toEqual([]);
});
