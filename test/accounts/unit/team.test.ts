import type { WorkspaceCommand, WorkspaceState } from '../../../src/accounts/workspace';
import { decideWorkspace, workspaceDecider } from '../../../src/accounts/workspace';
import { scenario } from '../../support/gwt';

const ws = scenario<WorkspaceState, WorkspaceCommand>(workspaceDecider, decideWorkspace);

const W = 'w1';
const created = { type: 'WorkspaceCreated', data: { workspaceId: W, name: 'Team', personal: false, createdBy: 'ann' } };
const personal = { type: 'WorkspaceCreated', data: { workspaceId: W, name: 'Personal', personal: true, createdBy: 'ann' } };
const joined = (userId: string, role: 'admin' | 'member' = 'member') => ({ type: 'MemberJoined', data: { workspaceId: W, userId, role } });
const roleChanged = (userId: string, role: 'admin' | 'member', previousRole: 'admin' | 'member', by = 'ann') => ({
  type: 'MemberRoleChanged',
  data: { workspaceId: W, userId, role, previousRole, by },
});
const invited = {
  type: 'InvitationSent',
  data: { workspaceId: W, invitationId: 'i1', email: 'carl@example.com', userId: 'carl', invitedBy: 'ann' },
};
const revoked = {
  type: 'InvitationRevoked',
  data: { workspaceId: W, invitationId: 'i1', email: 'carl@example.com', userId: 'carl', by: 'ann' },
};
const keyCreated = {
  type: 'ApiKeyCreated',
  data: {
    workspaceId: W,
    keyId: 'k1',
    name: 'prod key',
    keyHash: 'h1',
    prefix: 'tg_abcde',
    last4: 'wxyz',
    scopes: ['inference'],
    expiresAt: null,
    createdBy: 'bob',
  },
};
const team = [created, joined('ann', 'admin'), joined('bob')];

describe('workspace: roles', () => {
  test('an admin promotes a member: MemberRoleChanged', () => {
    ws.given(...team)
      .when({ type: 'ChangeMemberRole', data: { userId: 'bob', role: 'admin', by: 'ann' } })
      .then(roleChanged('bob', 'admin', 'member'));
  });
  test('an admin demotes themself while another admin stays', () => {
    ws.given(...team, roleChanged('bob', 'admin', 'member'))
      .when({ type: 'ChangeMemberRole', data: { userId: 'ann', role: 'member', by: 'ann' } })
      .then(roleChanged('ann', 'member', 'admin'));
  });
  test('the last admin cannot be demoted: 409', () => {
    ws.given(...team)
      .when({ type: 'ChangeMemberRole', data: { userId: 'ann', role: 'member', by: 'ann' } })
      .thenFails('conflict', /at least one admin/);
  });
  test('a demoted admin can no longer change roles: 403', () => {
    ws.given(...team, roleChanged('bob', 'admin', 'member'), roleChanged('ann', 'member', 'admin', 'bob'))
      .when({ type: 'ChangeMemberRole', data: { userId: 'bob', role: 'member', by: 'ann' } })
      .thenFails('forbidden', 'Forbidden');
  });
  test('the same role: nothing', () => {
    ws.given(...team)
      .when({ type: 'ChangeMemberRole', data: { userId: 'bob', role: 'member', by: 'ann' } })
      .thenNothing();
  });
  test('a non-member target: 404; a non-member actor: 404', () => {
    ws.given(...team)
      .when({ type: 'ChangeMemberRole', data: { userId: 'zed', role: 'admin', by: 'ann' } })
      .thenFails('not_found', 'Member not found');
    ws.given(...team)
      .when({ type: 'ChangeMemberRole', data: { userId: 'bob', role: 'admin', by: 'zed' } })
      .thenFails('not_found', 'Workspace not found');
  });
});

describe('workspace: revoking an invitation', () => {
  test('pending → revoked: InvitationRevoked; then accept, decline and revoke are 409', () => {
    ws.given(...team, invited)
      .when({ type: 'RevokeInvitation', data: { invitationId: 'i1', by: 'ann' } })
      .then(revoked);
    for (const type of ['AcceptInvitation', 'DeclineInvitation'] as const) {
      ws.given(...team, invited, revoked)
        .when({ type, data: { invitationId: 'i1', userId: 'carl' } })
        .thenFails('conflict', 'This invitation was already revoked');
    }
    ws.given(...team, invited, revoked)
      .when({ type: 'RevokeInvitation', data: { invitationId: 'i1', by: 'ann' } })
      .thenFails('conflict', /already revoked/);
  });
  test('a member revokes: 403; an unknown invitation: 404', () => {
    ws.given(...team, invited)
      .when({ type: 'RevokeInvitation', data: { invitationId: 'i1', by: 'bob' } })
      .thenFails('forbidden', 'Forbidden');
    ws.given(...team)
      .when({ type: 'RevokeInvitation', data: { invitationId: 'i1', by: 'ann' } })
      .thenFails('not_found', 'Invitation not found');
  });
});

describe('workspace: leaving', () => {
  test('a member leaves: MemberLeft, and is no longer a member', () => {
    ws.given(...team)
      .when({ type: 'LeaveWorkspace', data: { userId: 'bob' } })
      .then({ type: 'MemberLeft', data: { workspaceId: W, userId: 'bob' } });
    ws.given(...team, { type: 'MemberLeft', data: { workspaceId: W, userId: 'bob' } })
      .when({ type: 'LeaveWorkspace', data: { userId: 'bob' } })
      .thenFails('not_found', 'Workspace not found');
  });
  test('the last admin cannot leave; nobody leaves a personal workspace: 409', () => {
    ws.given(...team)
      .when({ type: 'LeaveWorkspace', data: { userId: 'ann' } })
      .thenFails('conflict', /last admin/);
    ws.given(personal, joined('ann', 'admin'))
      .when({ type: 'LeaveWorkspace', data: { userId: 'ann' } })
      .thenFails('conflict', 'Nobody can leave their personal workspace');
  });
});

describe("workspace: a key's name and budget", () => {
  const update = (data: Partial<Extract<WorkspaceCommand, { type: 'UpdateApiKey' }>['data']>): WorkspaceCommand => ({
    type: 'UpdateApiKey',
    data: { keyId: 'k1', by: 'bob', ...data },
  });
  // Released before periods: read as a monthly budget, no longer written.
  const budgetChanged = (to: string | null, from: string | null) => ({
    type: 'ApiKeyBudgetChanged',
    data: { workspaceId: W, keyId: 'k1', monthlyBudgetNanoUsd: to, previousBudgetNanoUsd: from, by: 'bob' },
  });
  const budgetChangedV2 = (to: string | null, period: string | null, from: string | null, previousPeriod: string | null) => ({
    type: 'ApiKeyBudgetChangedV2',
    data: { workspaceId: W, keyId: 'k1', budgetNanoUsd: to, period, previousBudgetNanoUsd: from, previousPeriod, by: 'bob' },
  });
  test('rename and budget together: ApiKeyRenamed then ApiKeyBudgetChangedV2 (monthly by default)', () => {
    ws.given(...team, keyCreated)
      .when(update({ name: ' new name ', budgetNanoUsd: '5000000000' }))
      .then(
        {
          type: 'ApiKeyRenamed',
          data: { workspaceId: W, keyId: 'k1', keyHash: 'h1', name: 'new name', previousName: 'prod key', by: 'bob' },
        },
        budgetChangedV2('5000000000', 'monthly', null, null),
      );
  });
  test('unchanged values: nothing (a released monthly budget included); a budget back to null: V2 to null', () => {
    ws.given(...team, keyCreated, budgetChanged('5', null))
      .when(update({ name: 'prod key', budgetNanoUsd: '5' }))
      .thenNothing();
    ws.given(...team, keyCreated, budgetChanged('5', null))
      .when(update({ budgetNanoUsd: '5', budgetPeriod: 'monthly' }))
      .thenNothing();
    ws.given(...team, keyCreated, budgetChanged('5', null))
      .when(update({ budgetNanoUsd: null }))
      .then(budgetChangedV2(null, null, '5', 'monthly'));
  });
  test('a period: with a budget, alone (keeps the amount), and a budget alone keeps the period', () => {
    ws.given(...team, keyCreated)
      .when(update({ budgetNanoUsd: '7', budgetPeriod: 'daily' }))
      .then(budgetChangedV2('7', 'daily', null, null));
    ws.given(...team, keyCreated, budgetChanged('5', null))
      .when(update({ budgetPeriod: 'weekly' }))
      .then(budgetChangedV2('5', 'weekly', '5', 'monthly'));
    ws.given(...team, keyCreated, budgetChangedV2('5', 'daily', null, null))
      .when(update({ budgetNanoUsd: '9' }))
      .then(budgetChangedV2('9', 'daily', '5', 'daily'));
  });
  test('a period that does not exist, or a period without a budget: 422, nothing appended', () => {
    ws.given(...team, keyCreated)
      .when(update({ budgetNanoUsd: '7', budgetPeriod: 'hourly' }))
      .thenFails('invalid', /budgetPeriod must be one of daily, weekly, monthly/);
    ws.given(...team, keyCreated)
      .when(update({ budgetPeriod: 'daily' }))
      .thenFails('invalid', /needs a budget/);
  });
  test('an unknown or deleted key: 404; nothing to change or a bad budget: 422; an outsider: 404', () => {
    const deleted = { type: 'ApiKeyDeleted', data: { workspaceId: W, keyId: 'k1', keyHash: 'h1', by: 'ann' } };
    ws.given(...team, keyCreated, deleted)
      .when(update({ name: 'abc' }))
      .thenFails('not_found', 'API key not found');
    ws.given(...team, keyCreated)
      .when(update({}))
      .thenFails('unprocessable', /name, budget/);
    ws.given(...team, keyCreated)
      .when(update({ budgetNanoUsd: '-1' }))
      .thenFails('invalid', /non-negative/);
    ws.given(...team, keyCreated)
      .when(update({ name: 'ab' }))
      .thenFails('unprocessable', /3 to 64/);
    ws.given(...team, keyCreated)
      .when(update({ name: 'abc', by: 'zed' }))
      .thenFails('not_found', 'Workspace not found');
  });
});
