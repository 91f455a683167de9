import { startTestServer, TestServer } from '../../support/harness';
import { api, createWorkspace, newUser, uniqueEmail } from './helpers';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({ INVITATIONS_PER_ADMIN_PER_HOUR: '3' });
});
afterAll(() => server?.close());

test('an admin has INVITATIONS_PER_ADMIN_PER_HOUR invitations, known e-mail or not; then 429 with Retry-After, and nothing is revealed', async () => {
  const admin = await newUser(server, 'inviter');
  const known = await newUser(server, 'known');
  const ws = await createWorkspace(server, admin, 'Probe');
  const invite = (email: string) => api(server).post(`/v1/workspaces/${ws}/invitations`).set(admin.auth).send({ email });
  expect((await invite(uniqueEmail('ghost'))).status).toBe(404);
  expect((await invite(uniqueEmail('ghost'))).status).toBe(404);
  expect((await invite(known.email)).status).toBe(201);
  const head = await server.services.store.headPosition();
  const over = await invite(known.email);
  expect(over.status).toBe(429);
  expect(over.body.detail).toMatch(/Too many invitations sent; retry in \d+ s/);
  expect(Number(over.headers['retry-after'])).toBeGreaterThan(3000);
  expect((await invite(uniqueEmail('ghost'))).status).toBe(429);
  expect(await server.services.store.headPosition()).toBe(head);
  // Another admin has a budget of their own.
  const other = await newUser(server, 'other');
  const ws2 = await createWorkspace(server, other, 'Other');
  expect((await api(server).post(`/v1/workspaces/${ws2}/invitations`).set(other.auth).send({ email: known.email })).status).toBe(201);
});
