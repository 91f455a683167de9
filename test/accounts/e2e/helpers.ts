import { randomBytes, randomUUID } from 'node:crypto';
import request from 'supertest';
import type { ApiKeyCreated } from '../../../src/accounts/events';
import { streams } from '../../../src/platform/streams';
import { usd } from '../../../src/platform/money';
import type { TestServer } from '../../support/harness';
import { usagePolicyOf } from '../../../src/accounts/policy/policy-document';

export const PASSWORD = 'correct horse battery';

export interface TestUser {
  userId: string;
  email: string;
  name: string;
  token: string;
  personalWs: string;
  auth: { Authorization: string };
}

export const uniqueEmail = (label = 'user') => `${label}-${randomBytes(4).toString('hex')}@example.com`;

/** The usage-policy version the server serves: a signup accepts it (a server in another process serves the default). */
export const policyVersionOf = (server: TestServer) => usagePolicyOf(server.services?.config ?? {}).version;

export async function signup(server: TestServer, email: string, name = 'Test User', password = PASSWORD) {
  const res = await request(server.url)
    .post('/v1/signup')
    .send({ email, password, name, acceptedPolicyVersion: policyVersionOf(server) });
  if (res.status !== 201) throw new Error(`signup failed: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body as { userId: string; email: string; name: string };
}

export async function login(server: TestServer, email: string, password = PASSWORD): Promise<string> {
  const res = await request(server.url).post('/v1/login').send({ email, password });
  if (res.status !== 200) throw new Error(`login failed: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.sessionToken as string;
}

/** Signs up and logs in (which creates the personal workspace). */
export async function newUser(server: TestServer, label = 'user'): Promise<TestUser> {
  const email = uniqueEmail(label);
  const name = `${label[0].toUpperCase()}${label.slice(1)}`;
  const { userId } = await signup(server, email, name);
  const token = await login(server, email);
  const me = await request(server.url).get('/v1/me').set('Authorization', `Bearer ${token}`);
  const personal = (me.body.workspaces as { workspaceId: string; personal: boolean }[]).find((w) => w.personal);
  if (!personal) throw new Error(`no personal workspace: ${JSON.stringify(me.body)}`);
  return { userId, email, name, token, personalWs: personal.workspaceId, auth: { Authorization: `Bearer ${token}` } };
}

export async function createWorkspace(server: TestServer, user: TestUser, name = 'Team'): Promise<string> {
  const res = await request(server.url).post('/v1/workspaces').set(user.auth).send({ name });
  if (res.status !== 201) throw new Error(`create workspace failed: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.workspaceId as string;
}

/** Invites and accepts: `invitee` becomes a member of `ws`. */
export async function addMember(server: TestServer, admin: TestUser, ws: string, invitee: TestUser): Promise<void> {
  const inv = await request(server.url).post(`/v1/workspaces/${ws}/invitations`).set(admin.auth).send({ email: invitee.email });
  if (inv.status !== 201) throw new Error(`invite failed: ${inv.status} ${JSON.stringify(inv.body)}`);
  const acc = await request(server.url).post(`/v1/invitations/${inv.body.invitationId}/accept`).set(invitee.auth);
  if (acc.status !== 200) throw new Error(`accept failed: ${acc.status} ${JSON.stringify(acc.body)}`);
}

/** Until billing writes them itself: a card and deposits appended straight to billing-{ws}. */
export async function fund(server: TestServer, ws: string, opts: { paymentMethod?: boolean; depositUsd?: number } = {}): Promise<void> {
  const { paymentMethod = true, depositUsd = 100 } = opts;
  const events = [];
  if (paymentMethod) {
    events.push({
      id: randomUUID(),
      type: 'PaymentMethodAttached',
      data: { workspaceId: ws, paymentMethodId: 'pm_card_visa', brand: 'visa', last4: '4242', customerId: null, gateway: 'sandbox' },
    });
  }
  if (depositUsd > 0) {
    events.push({
      id: randomUUID(),
      type: 'DepositSucceeded',
      data: {
        workspaceId: ws,
        depositId: randomUUID(),
        amountNanoUsd: usd(depositUsd).toString(),
        paymentIntentId: `pi_${randomUUID()}`,
        by: 'test',
      },
    });
  }
  if (!events.length) return;
  const done = await server.services.store.append(streams.billing(ws), events, { expectedRevision: 'any' });
  await server.services.progress.waitFor(done.position, 5000);
}

/** A key record appended directly (e.g. one that already expired). Returns its secret. */
export async function appendKey(server: TestServer, ws: string, by: string, data: Partial<ApiKeyCreated['data']> & { secret: string }) {
  const { hashKey } = await import('../../../src/accounts/projections/key-index/queries');
  const keyId = data.keyId ?? randomUUID();
  const done = await server.services.store.append(
    streams.workspace(ws),
    [
      {
        id: randomUUID(),
        type: 'ApiKeyCreated',
        data: {
          workspaceId: ws,
          keyId,
          name: data.name ?? 'appended key',
          keyHash: hashKey(data.secret),
          prefix: data.secret.slice(0, 8),
          last4: data.secret.slice(-4),
          scopes: data.scopes ?? ['inference'],
          expiresAt: data.expiresAt ?? null,
          createdBy: by,
        },
      },
    ],
    { expectedRevision: 'any' },
  );
  await server.services.progress.waitFor(done.position, 5000);
  return keyId;
}

export const api = (server: TestServer) => request(server.url);

/** The cast most account tests play: ann, admin of `team`; bob, a member of it; eve, an outsider. */
export interface TeamFixture {
  server: TestServer;
  ann: TestUser;
  bob: TestUser;
  eve: TestUser;
  team: string;
  /** With `funded`: eve's own workspace, funded like `team`. */
  eveWs: string;
}

/**
 * Registers the file's beforeAll / afterAll: a test server and the cast of TeamFixture. `funded`
 * gives `team` and eve's own workspace a card and a deposit. The returned object is filled in
 * beforeAll: read its fields inside hooks and tests, not at the top level.
 */
export function teamFixture(opts: { funded?: boolean } = {}): TeamFixture {
  const t = {} as TeamFixture;
  beforeAll(async () => {
    // Loaded here: files that import these helpers without a fixture (child-process tests) do not load the app.
    const { startTestServer } = await import('../../support/harness');
    const server = await startTestServer();
    t.server = server;
    [t.ann, t.bob, t.eve] = await Promise.all([newUser(server, 'ann'), newUser(server, 'bob'), newUser(server, 'eve')]);
    t.team = await createWorkspace(server, t.ann, 'Team');
    await addMember(server, t.ann, t.team, t.bob);
    if (opts.funded) {
      await Promise.all([
        fund(server, t.team),
        (async () => {
          t.eveWs = await createWorkspace(server, t.eve, 'Eve Corp');
          await fund(server, t.eveWs);
        })(),
      ]);
    }
  });
  afterAll(() => t.server?.close());
  return t;
}
