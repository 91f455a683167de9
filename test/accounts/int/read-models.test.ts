import { randomUUID } from 'node:crypto';
import { accountsModule } from '../../../src/accounts/module';
import { adminsOf, membershipOf } from '../../../src/accounts/sessions/access';
import { readNotices, postNotice, clearNotice } from '../../../src/accounts/notices';
import { streams } from '../../../src/platform/streams';
import { keysOf } from '../../../src/accounts/projections/api-keys/queries';
import { invitation, pendingForEmail, pendingForWorkspace } from '../../../src/accounts/projections/invitations/queries';
import { membersOf, workspacesOf, workspaceInfo } from '../../../src/accounts/projections/memberships/queries';
import { rebuildProjection } from '../../../src/platform/projections/rebuild';
import { profilesOf } from '../../../src/accounts/projections/users/queries';
import type { Module } from '../../../src/services';
import { startTestServer, TestServer } from '../../support/harness';
import { patience } from '../../support/wait';

// Only the account read models: what they hold must come from events alone.
const readModelsOnly: Module = { name: 'accounts-read-models', projections: accountsModule.projections };

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({}, { modules: [readModelsOnly] });
});
afterAll(() => server.close());

async function append(stream: string, ...events: [string, Record<string, unknown>][]) {
  const s = server.services;
  const r = await s.store.append(
    stream,
    events.map(([type, data]) => ({ id: randomUUID(), type, data })),
    { expectedRevision: 'any' },
  );
  expect(await s.progress.waitFor(r.position, patience(5000))).toBe(true);
}

const ids = () => ({ ws: randomUUID(), ann: randomUUID(), bob: randomUUID(), carl: randomUUID() });

async function seed() {
  const { ws, ann, bob, carl } = ids();
  for (const [id, name] of [
    [ann, 'Ann'],
    [bob, 'Bob'],
    [carl, 'Carl'],
  ]) {
    await append(streams.user(id), ['UserRegistered', { userId: id, email: `${id}@example.com`, name, passwordHash: 'scrypt$secret' }]);
  }
  const W = streams.workspace(ws);
  await append(
    W,
    ['WorkspaceCreated', { workspaceId: ws, name: 'Team', personal: false, createdBy: ann }],
    ['MemberJoined', { workspaceId: ws, userId: ann, role: 'admin' }],
    ['InvitationSent', { workspaceId: ws, invitationId: `i-bob-${ws}`, email: `${bob}@example.com`, userId: bob, invitedBy: ann }],
    ['InvitationSent', { workspaceId: ws, invitationId: `i-carl-${ws}`, email: `${carl}@example.com`, userId: carl, invitedBy: ann }],
  );
  await append(
    W,
    ['InvitationAccepted', { workspaceId: ws, invitationId: `i-bob-${ws}`, userId: bob }],
    ['MemberJoined', { workspaceId: ws, userId: bob, role: 'member' }],
  );
  await append(W, ['WorkspaceRenamed', { workspaceId: ws, name: 'Team 2', by: ann }]);
  await append(
    W,
    [
      'ApiKeyCreated',
      {
        workspaceId: ws,
        keyId: 'k1',
        name: 'one',
        keyHash: 'h1',
        prefix: 'tg_aaaaa',
        last4: '1111',
        scopes: ['inference'],
        expiresAt: null,
        createdBy: bob,
      },
    ],
    [
      'ApiKeyCreated',
      {
        workspaceId: ws,
        keyId: 'k2',
        name: 'two',
        keyHash: 'h2',
        prefix: 'tg_bbbbb',
        last4: '2222',
        scopes: [],
        expiresAt: '2031-01-01T00:00:00.000Z',
        createdBy: ann,
      },
    ],
    ['ApiKeyDeleted', { workspaceId: ws, keyId: 'k1', keyHash: 'h1', by: ann }],
  );
  return { ws, ann, bob, carl };
}

async function snapshot(x: { ws: string; ann: string; bob: string; carl: string }) {
  const rm = server.services.readModels;
  return {
    info: await workspaceInfo(rm, x.ws),
    members: await membersOf(rm, x.ws),
    bobsWorkspaces: await workspacesOf(rm, x.bob),
    carlPending: await pendingForEmail(rm, `${x.carl}@example.com`),
    bobPending: await pendingForEmail(rm, `${x.bob}@example.com`),
    wsPending: await pendingForWorkspace(rm, x.ws),
    bobInvitation: await invitation(rm, `i-bob-${x.ws}`),
    keys: await keysOf(rm, x.ws),
    profiles: [...(await profilesOf(rm, [x.ann, x.bob, 'nobody'])).values()],
  };
}

test('the account read models fold workspaces, members, invitations, users and keys from events', async () => {
  const x = await seed();
  const snap = await snapshot(x);
  expect(snap.info).toMatchObject({ workspaceId: x.ws, name: 'Team 2', personal: false, createdBy: x.ann });
  expect(snap.members.map((m) => [m.userId, m.role])).toEqual([
    [x.ann, 'admin'],
    [x.bob, 'member'],
  ]);
  expect(snap.bobsWorkspaces.map((w) => [w.workspaceId, w.role, w.name])).toEqual([[x.ws, 'member', 'Team 2']]);
  expect(snap.carlPending.map((i) => [i.invitationId, i.status, i.workspaceId])).toEqual([[`i-carl-${x.ws}`, 'pending', x.ws]]);
  expect(snap.bobPending).toEqual([]);
  expect(snap.wsPending.map((i) => i.invitationId)).toEqual([`i-carl-${x.ws}`]);
  expect(snap.bobInvitation).toMatchObject({ status: 'accepted', settled: expect.any(String) });
  expect(snap.keys.map((k) => [k.keyId, k.name, k.scopes, k.expiresAt])).toEqual([['k2', 'two', [], '2031-01-01T00:00:00.000Z']]);
  expect(snap.profiles.map((p) => p.name)).toEqual(['Ann', 'Bob']);
  // Never the password hash.
  expect(JSON.stringify(snap)).not.toContain('scrypt$secret');

  expect(await membershipOf(server.services, x.ws, x.bob)).toBe('member');
  expect(await membershipOf(server.services, x.ws, x.carl)).toBeNull();
  expect(await adminsOf(server.services, x.ws)).toEqual([x.ann]);

  await append(streams.workspace(x.ws), ['MemberRemoved', { workspaceId: x.ws, userId: x.bob, by: x.ann }]);
  expect(await membershipOf(server.services, x.ws, x.bob)).toBeNull();
  expect(await workspacesOf(server.services.readModels, x.bob)).toEqual([]);
});

test('a rebuild of every account read model reproduces the live one exactly', async () => {
  const x = await seed();
  await append(streams.workspace(x.ws), ['InvitationDeclined', { workspaceId: x.ws, invitationId: `i-carl-${x.ws}`, userId: x.carl }]);
  const live = await snapshot(x);
  const s = server.services;
  for (const projection of accountsModule.projections!(s)) {
    const res = await rebuildProjection({ store: s.store, redis: s.redis, ks: s.ks, projection });
    expect(res.gen).not.toBe('0');
  }
  expect(await snapshot(x)).toEqual(live);
  expect(live.carlPending).toEqual([]);
});

test('notices: per user, and per workspace for its admins (or all members), newest first; cleared by id', async () => {
  const x = await seed();
  const { redis, ks } = server.services;
  await postNotice(
    redis,
    ks,
    { workspaceId: x.ws },
    { id: 'n1', kind: 'auto_reload_suspended', message: 'Card declined', created: '2030-01-01T00:00:00Z' },
  );
  await postNotice(
    redis,
    ks,
    { workspaceId: x.ws },
    { id: 'n2', kind: 'info', message: 'For everyone', audience: 'members', created: '2030-01-02T00:00:00Z' },
  );
  await postNotice(redis, ks, { userId: x.bob }, { id: 'n3', kind: 'welcome', message: 'Hi Bob', created: '2030-01-03T00:00:00Z' });
  // Re-posting the same id replaces it (a replay writes nothing new).
  await postNotice(
    redis,
    ks,
    { workspaceId: x.ws },
    { id: 'n1', kind: 'auto_reload_suspended', message: 'Card declined', created: '2030-01-01T00:00:00Z' },
  );

  expect((await readNotices(server.services, x.ann)).map((n) => [n.id, n.workspaceId])).toEqual([
    ['n2', x.ws],
    ['n1', x.ws],
  ]);
  expect((await readNotices(server.services, x.bob)).map((n) => n.id)).toEqual(['n3', 'n2']);
  expect(await readNotices(server.services, x.carl)).toEqual([]);
  await clearNotice(redis, ks, { workspaceId: x.ws }, 'n1');
  expect((await readNotices(server.services, x.ann)).map((n) => n.id)).toEqual(['n2']);
});
