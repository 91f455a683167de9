import { membershipsProjection } from '../../../../src/accounts/projections/memberships/projection';
import { membersOf, membership, workspaceInfo, workspacesOf } from '../../../../src/accounts/projections/memberships/queries';
import { projectionSpec } from '../../../support/projection-gwt';

const spec = projectionSpec(membershipsProjection);
const created = {
  type: 'WorkspaceCreated',
  data: { workspaceId: 'w1', name: 'Team', personal: false, createdBy: 'ann' },
  created: '2026-03-01T00:00:00.000Z',
} as const;

describe('memberships projection', () => {
  test('a workspace, renamed, with its members both ways round', () =>
    spec
      .given(
        created,
        { type: 'MemberJoined', data: { workspaceId: 'w1', userId: 'ann', role: 'admin' } },
        { type: 'MemberJoined', data: { workspaceId: 'w1', userId: 'bob', role: 'member' } },
        { type: 'WorkspaceRenamed', data: { workspaceId: 'w1', name: 'Team 2', by: 'ann' } },
      )
      .then(async ({ readModels }) => {
        expect(await workspaceInfo(readModels, 'w1')).toEqual({
          workspaceId: 'w1',
          name: 'Team 2',
          personal: false,
          createdBy: 'ann',
          created: '2026-03-01T00:00:00.000Z',
        });
        expect(await membership(readModels, 'w1', 'bob')).toMatchObject({ workspaceId: 'w1', role: 'member' });
        expect((await membersOf(readModels, 'w1')).map((m) => [m.userId, m.role]).sort()).toEqual([
          ['ann', 'admin'],
          ['bob', 'member'],
        ]);
        expect((await workspacesOf(readModels, 'bob')).map((m) => [m.workspaceId, m.role])).toEqual([['w1', 'member']]);
      }));

  test('a role change shows both ways; a removed member and a leaver are gone both ways', () =>
    spec
      .given(
        created,
        { type: 'MemberJoined', data: { workspaceId: 'w1', userId: 'ann', role: 'admin' } },
        { type: 'MemberJoined', data: { workspaceId: 'w1', userId: 'bob', role: 'member' } },
        { type: 'MemberJoined', data: { workspaceId: 'w1', userId: 'carl', role: 'member' } },
        { type: 'MemberJoined', data: { workspaceId: 'w1', userId: 'dora', role: 'member' } },
        { type: 'MemberRoleChanged', data: { workspaceId: 'w1', userId: 'bob', role: 'admin', previousRole: 'member', by: 'ann' } },
        { type: 'MemberRemoved', data: { workspaceId: 'w1', userId: 'carl', by: 'ann' } },
        { type: 'MemberLeft', data: { workspaceId: 'w1', userId: 'dora' } },
      )
      .then(async ({ readModels }) => {
        expect((await membership(readModels, 'w1', 'bob'))?.role).toBe('admin');
        expect((await workspacesOf(readModels, 'bob')).map((m) => m.role)).toEqual(['admin']);
        expect(await membership(readModels, 'w1', 'carl')).toBeNull();
        expect(await workspacesOf(readModels, 'carl')).toEqual([]);
        expect(await membership(readModels, 'w1', 'dora')).toBeNull();
        expect((await membersOf(readModels, 'w1')).map((m) => m.userId).sort()).toEqual(['ann', 'bob']);
      }));
});
