import { randomUUID } from 'node:crypto';
import { accountsModule } from '../../../src/accounts/module';
import { streams } from '../../../src/platform/streams';
import { keysOf } from '../../../src/accounts/projections/api-keys/queries';
import { auditPage } from '../../../src/accounts/projections/audit/queries';
import { invitation, pendingForEmail, pendingForWorkspace } from '../../../src/accounts/projections/invitations/queries';
import { membersOf, workspacesOf } from '../../../src/accounts/projections/memberships/queries';
import { rebuildProjection } from '../../../src/platform/projections/rebuild';
import type { Module } from '../../../src/services';
import { startTestServer, TestServer } from '../../support/harness';
import { patience } from '../../support/wait';

/** Roles, leaving, revoking, renames and budgets in the account read models, from events alone. */
const readModelsOnly: Module = { name: 'accounts-read-models', projections: accountsModule.projections };

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({}, { modules: [readModelsOnly] });
});
afterAll(() => server.close());

async function seed() {
  const ws = randomUUID();
  const [ann, bob, carl] = [randomUUID(), randomUUID(), randomUUID()];
  const events: [string, Record<string, unknown>][] = [
    ['WorkspaceCreated', { workspaceId: ws, name: 'Team', personal: false, createdBy: ann }],
    ['MemberJoined', { workspaceId: ws, userId: ann, role: 'admin' }],
    ['MemberJoined', { workspaceId: ws, userId: bob, role: 'member' }],
    ['MemberRoleChanged', { workspaceId: ws, userId: bob, role: 'admin', previousRole: 'member', by: ann }],
    ['MemberLeft', { workspaceId: ws, userId: ann }],
    ['InvitationSent', { workspaceId: ws, invitationId: `i-${ws}`, email: 'carl@example.com', userId: carl, invitedBy: bob }],
    ['InvitationRevoked', { workspaceId: ws, invitationId: `i-${ws}`, email: 'carl@example.com', userId: carl, by: bob }],
    [
      'ApiKeyCreated',
      {
        workspaceId: ws,
        keyId: `k-${ws}`,
        name: 'one',
        keyHash: 'h1',
        prefix: 'tg_aaaaa',
        last4: '1111',
        scopes: ['inference'],
        expiresAt: null,
        createdBy: ann,
      },
    ],
    ['ApiKeyRenamed', { workspaceId: ws, keyId: `k-${ws}`, keyHash: 'h1', name: 'uno', previousName: 'one', by: bob }],
    [
      'ApiKeyBudgetChanged',
      { workspaceId: ws, keyId: `k-${ws}`, monthlyBudgetNanoUsd: '7500000000', previousBudgetNanoUsd: null, by: bob },
    ],
  ];
  const r = await server.services.store.append(
    streams.workspace(ws),
    events.map(([type, data]) => ({ id: randomUUID(), type, data, metadata: { actor: String(data.by ?? data.createdBy ?? data.userId) } })),
    { expectedRevision: 'no_stream' },
  );
  expect(await server.services.progress.waitFor(r.position, patience(5000))).toBe(true);
  return { ws, ann, bob, carl };
}

async function snapshot(x: { ws: string; ann: string; bob: string }) {
  const rm = server.services.readModels;
  return {
    members: await membersOf(rm, x.ws),
    annsWorkspaces: await workspacesOf(rm, x.ann),
    bobsWorkspaces: (await workspacesOf(rm, x.bob)).map((w) => [w.workspaceId, w.role]),
    carlPending: await pendingForEmail(rm, 'carl@example.com'),
    wsPending: await pendingForWorkspace(rm, x.ws),
    revoked: await invitation(rm, `i-${x.ws}`),
    keys: await keysOf(rm, x.ws),
    audit: await auditPage(rm, x.ws, { limit: 100 }),
  };
}

test('roles, leaving, revoking, renaming and budgets fold into the read models, and a rebuild reproduces them exactly', async () => {
  const x = await seed();
  const live = await snapshot(x);
  expect(live.members.map((m) => [m.userId, m.role])).toEqual([[x.bob, 'admin']]);
  expect(live.annsWorkspaces).toEqual([]);
  expect(live.bobsWorkspaces).toEqual([[x.ws, 'admin']]);
  expect(live.carlPending.filter((i) => i.workspaceId === x.ws)).toEqual([]);
  expect(live.wsPending).toEqual([]);
  expect(live.revoked).toMatchObject({ status: 'revoked', settled: expect.any(String) });
  expect(live.keys.map((k) => [k.name, k.budget, k.budgetPeriod])).toEqual([['uno', 7_500_000_000n, 'monthly']]);
  expect(live.audit.entries.map((e) => e.action)).toEqual([
    'key.budget_changed',
    'key.renamed',
    'key.created',
    'invitation.revoked',
    'invitation.sent',
    'member.left',
    'member.role_changed',
    'member.joined',
    'member.joined',
    'workspace.created',
  ]);
  expect(JSON.stringify(live.audit)).not.toContain('h1');

  const s = server.services;
  for (const projection of accountsModule.projections!(s))
    await rebuildProjection({ store: s.store, redis: s.redis, ks: s.ks, projection });
  expect(await snapshot(x)).toEqual(live);
});
