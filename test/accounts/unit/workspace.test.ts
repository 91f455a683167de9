import fc from 'fast-check';
import { DomainError } from '../../../src/platform/errors';
import { usd } from '../../../src/platform/money';
import type { Event } from '../../../src/platform/event';
import { decideWorkspace, fundingShortfall, workspaceDecider, WorkspaceCommand, WorkspaceState } from '../../../src/accounts/workspace';
import { foldWith, scenario } from '../../support/gwt';

const ws = scenario<WorkspaceState, WorkspaceCommand>(workspaceDecider, decideWorkspace);

const W = 'w1';
const created = { type: 'WorkspaceCreated', data: { workspaceId: W, name: 'Team', personal: false, createdBy: 'ann' } };
const personalCreated = { type: 'WorkspaceCreated', data: { workspaceId: W, name: 'Personal', personal: true, createdBy: 'ann' } };
const joined = (userId: string, role: 'admin' | 'member' = 'member') => ({ type: 'MemberJoined', data: { workspaceId: W, userId, role } });
const invited = (invitationId: string, userId: string, email = `${userId}@example.com`) => ({
  type: 'InvitationSent',
  data: { workspaceId: W, invitationId, email, userId, invitedBy: 'ann' },
});
const accepted = (invitationId: string, userId: string) => ({ type: 'InvitationAccepted', data: { workspaceId: W, invitationId, userId } });
const declined = (invitationId: string, userId: string) => ({ type: 'InvitationDeclined', data: { workspaceId: W, invitationId, userId } });
const removed = (userId: string, by = 'ann') => ({ type: 'MemberRemoved', data: { workspaceId: W, userId, by } });
const team = [created, joined('ann', 'admin')];

const funded = { hasPaymentMethod: true, depositedNanoUsd: usd(100), funded: true };
const NOW = '2030-01-01T00:00:00.000Z';
const createKey = (over: Partial<Extract<WorkspaceCommand, { type: 'CreateApiKey' }>['data']> = {}): WorkspaceCommand => ({
  type: 'CreateApiKey',
  data: {
    keyId: 'k1',
    name: 'prod key',
    keyHash: 'h1',
    prefix: 'tg_abcde',
    last4: 'wxyz',
    scopes: ['inference'],
    expiresAt: null,
    by: 'ann',
    now: NOW,
    funding: funded,
    requiredDepositNanoUsd: usd(100),
    ...over,
  },
});
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
    createdBy: 'ann',
  },
};

describe('workspace: create and rename', () => {
  test('given nothing, when creating, then WorkspaceCreated and the creator joins as admin', () => {
    ws.given()
      .when({ type: 'CreateWorkspace', data: { workspaceId: W, name: ' Team ', personal: false, by: 'ann' } })
      .then(created, joined('ann', 'admin'));
  });

  test('given a workspace, when creating it again, then 409', () => {
    ws.given(...team)
      .when({ type: 'CreateWorkspace', data: { workspaceId: W, name: 'X', personal: false, by: 'ann' } })
      .thenFails('conflict', /already exists/);
  });

  test('given nothing, when ensuring the personal workspace, then it is created as personal', () => {
    ws.given()
      .when({ type: 'EnsurePersonalWorkspace', data: { workspaceId: W, name: 'Personal', by: 'ann' } })
      .then(personalCreated, joined('ann', 'admin'));
  });

  test('given the personal workspace, when ensuring it again, then nothing (idempotent)', () => {
    ws.given(personalCreated, joined('ann', 'admin'))
      .when({ type: 'EnsurePersonalWorkspace', data: { workspaceId: W, name: 'Personal', by: 'ann' } })
      .thenNothing();
  });

  test('given nothing, when creating with a blank name, then 422', () => {
    ws.given()
      .when({ type: 'CreateWorkspace', data: { workspaceId: W, name: '   ', personal: false, by: 'ann' } })
      .thenFails('unprocessable', /name/);
  });

  test('given a workspace, when its admin renames it, then WorkspaceRenamed', () => {
    ws.given(...team)
      .when({ type: 'RenameWorkspace', data: { name: 'Renamed', by: 'ann' } })
      .then({
        type: 'WorkspaceRenamed',
        data: { workspaceId: W, name: 'Renamed', by: 'ann' },
      });
  });

  test('given a workspace, when renaming to the same name, then nothing', () => {
    ws.given(...team)
      .when({ type: 'RenameWorkspace', data: { name: 'Team', by: 'ann' } })
      .thenNothing();
  });

  test('given a member, when the member renames, then 403 Forbidden', () => {
    ws.given(...team, joined('bob'))
      .when({ type: 'RenameWorkspace', data: { name: 'Mine', by: 'bob' } })
      .thenFails('forbidden', 'Forbidden');
  });

  test('given a workspace, when a non-member renames, then 404 (ids cannot be probed)', () => {
    ws.given(...team)
      .when({ type: 'RenameWorkspace', data: { name: 'Mine', by: 'eve' } })
      .thenFails('not_found', 'Workspace not found');
  });

  test('given nothing, when renaming, then 404', () => {
    ws.given()
      .when({ type: 'RenameWorkspace', data: { name: 'Mine', by: 'ann' } })
      .thenFails('not_found', 'Workspace not found');
  });
});

describe('workspace: invitations', () => {
  const invite = (by = 'ann', userId = 'bob', invitationId = 'i1'): WorkspaceCommand => ({
    type: 'InviteMember',
    data: { invitationId, email: `${userId.toUpperCase()}@example.com`, inviteeUserId: userId, by },
  });

  test('(none) → pending: given a workspace, when its admin invites an account, then InvitationSent (e-mail normalized)', () => {
    ws.given(...team)
      .when(invite())
      .then(invited('i1', 'bob'));
  });

  test('pending → accepted: when the invitee accepts, then InvitationAccepted and MemberJoined as member', () => {
    ws.given(...team, invited('i1', 'bob'))
      .when({ type: 'AcceptInvitation', data: { invitationId: 'i1', userId: 'bob' } })
      .then(accepted('i1', 'bob'), joined('bob'));
  });

  test('pending → declined: when the invitee declines, then InvitationDeclined', () => {
    ws.given(...team, invited('i1', 'bob'))
      .when({ type: 'DeclineInvitation', data: { invitationId: 'i1', userId: 'bob' } })
      .then(declined('i1', 'bob'));
  });

  test('accept twice: 409', () => {
    ws.given(...team, invited('i1', 'bob'), accepted('i1', 'bob'), joined('bob'))
      .when({ type: 'AcceptInvitation', data: { invitationId: 'i1', userId: 'bob' } })
      .thenFails('conflict', 'This invitation was already accepted');
  });

  test('accept after decline: 409', () => {
    ws.given(...team, invited('i1', 'bob'), declined('i1', 'bob'))
      .when({ type: 'AcceptInvitation', data: { invitationId: 'i1', userId: 'bob' } })
      .thenFails('conflict', 'This invitation was already declined');
  });

  test('decline after accept: 409', () => {
    ws.given(...team, invited('i1', 'bob'), accepted('i1', 'bob'), joined('bob'))
      .when({ type: 'DeclineInvitation', data: { invitationId: 'i1', userId: 'bob' } })
      .thenFails('conflict', 'This invitation was already accepted');
  });

  test("accepting someone else's invitation: 404, like a missing one", () => {
    ws.given(...team, invited('i1', 'bob'))
      .when({ type: 'AcceptInvitation', data: { invitationId: 'i1', userId: 'eve' } })
      .thenFails('not_found', 'Invitation not found');
    ws.given(...team)
      .when({ type: 'AcceptInvitation', data: { invitationId: 'nope', userId: 'bob' } })
      .thenFails('not_found', 'Invitation not found');
  });

  test('a non-admin invites: 403 Forbidden', () => {
    ws.given(...team, joined('bob'))
      .when(invite('bob', 'carl'))
      .thenFails('forbidden', 'Forbidden');
  });

  test('a non-member invites: 404', () => {
    ws.given(...team)
      .when(invite('eve', 'carl'))
      .thenFails('not_found', 'Workspace not found');
  });

  test('an existing member: 409', () => {
    ws.given(...team, joined('bob'))
      .when(invite())
      .thenFails('conflict', 'bob@example.com is already a member of this workspace');
  });

  test('inviting yourself: 409 (already a member)', () => {
    ws.given(...team)
      .when(invite('ann', 'ann'))
      .thenFails('conflict', /already a member/);
  });

  test('a second pending invitation for the same person: 409', () => {
    ws.given(...team, invited('i1', 'bob'))
      .when(invite('ann', 'bob', 'i2'))
      .thenFails('conflict', /already has a pending invitation/);
  });

  test('after a decline the person can be invited again', () => {
    ws.given(...team, invited('i1', 'bob'), declined('i1', 'bob'))
      .when(invite('ann', 'bob', 'i2'))
      .then(invited('i2', 'bob'));
  });

  test('after a removal the person can be invited again', () => {
    ws.given(...team, invited('i1', 'bob'), accepted('i1', 'bob'), joined('bob'), removed('bob'))
      .when(invite('ann', 'bob', 'i2'))
      .then(invited('i2', 'bob'));
  });

  test('an invitation into a personal workspace: 409', () => {
    ws.given(personalCreated, joined('ann', 'admin'))
      .when(invite())
      .thenFails('conflict', /personal workspace cannot have other members/);
  });
});

describe('workspace: members', () => {
  test('member → removed: given a member, when an admin removes them, then MemberRemoved', () => {
    ws.given(...team, joined('bob'))
      .when({ type: 'RemoveMember', data: { userId: 'bob', by: 'ann' } })
      .then(removed('bob'));
  });

  test('a non-admin removes: 403 Forbidden', () => {
    ws.given(...team, joined('bob'), joined('carl'))
      .when({ type: 'RemoveMember', data: { userId: 'carl', by: 'bob' } })
      .thenFails('forbidden', 'Forbidden');
  });

  test('a removed member removes: 404 (no longer sees the workspace)', () => {
    ws.given(...team, joined('bob'), joined('carl'), removed('bob'))
      .when({ type: 'RemoveMember', data: { userId: 'carl', by: 'bob' } })
      .thenFails('not_found', 'Workspace not found');
  });

  test('removing someone who is not a member: 404', () => {
    ws.given(...team)
      .when({ type: 'RemoveMember', data: { userId: 'zed', by: 'ann' } })
      .thenFails('not_found', 'Member not found');
  });

  test('removing twice: 404 the second time', () => {
    ws.given(...team, joined('bob'), removed('bob'))
      .when({ type: 'RemoveMember', data: { userId: 'bob', by: 'ann' } })
      .thenFails('not_found', 'Member not found');
  });

  test('the last admin cannot be removed (a workspace always keeps one)', () => {
    ws.given(...team, joined('bob'))
      .when({ type: 'RemoveMember', data: { userId: 'ann', by: 'ann' } })
      .thenFails('conflict', /at least one admin/);
  });

  test('an admin may leave when another admin remains', () => {
    ws.given(...team, joined('bob', 'admin'))
      .when({ type: 'RemoveMember', data: { userId: 'ann', by: 'ann' } })
      .then(removed('ann', 'ann'));
  });

  test("the personal workspace's owner cannot be removed", () => {
    ws.given(personalCreated, joined('ann', 'admin'))
      .when({ type: 'RemoveMember', data: { userId: 'ann', by: 'ann' } })
      .thenFails('conflict', /personal workspace cannot be removed/);
  });
});

describe('workspace: API keys', () => {
  test('given a funded workspace, when a member creates a key, then ApiKeyCreated (hash, never a secret)', () => {
    ws.given(...team)
      .when(createKey())
      .then(keyCreated);
  });

  test('a plain member may create keys too', () => {
    ws.given(...team, joined('bob'))
      .when(createKey({ by: 'bob' }))
      .then({ ...keyCreated, data: { ...keyCreated.data, createdBy: 'bob' } });
  });

  test('a non-member: 404', () => {
    ws.given(...team)
      .when(createKey({ by: 'eve' }))
      .thenFails('not_found', 'Workspace not found');
  });

  test('no payment method and no deposit: 402 naming both', () => {
    ws.given(...team)
      .when(createKey({ funding: { hasPaymentMethod: false, depositedNanoUsd: 0n, funded: false } }))
      .thenFails('payment_required', /no payment method is on file and deposits total 0 USD of the required 100 USD/);
  });

  test('a card but only 40 USD deposited: 402 naming the shortfall only', () => {
    let caught: DomainError | undefined;
    try {
      decideWorkspace(
        createKey({ funding: { hasPaymentMethod: true, depositedNanoUsd: usd(40), funded: false } }),
        foldWith(workspaceDecider, [created, joined('ann', 'admin')]),
      );
    } catch (err) {
      caught = err as DomainError;
    }
    expect(caught?.code).toBe('payment_required');
    expect(caught?.message).toMatch(/deposits total 40 USD of the required 100 USD/);
    expect(caught?.message).not.toMatch(/payment method is on file/);
  });

  test('names shorter than 3 or longer than 64 characters: 422', () => {
    ws.given(...team)
      .when(createKey({ name: 'ab' }))
      .thenFails('unprocessable', /3 to 64/);
    ws.given(...team)
      .when(createKey({ name: 'x'.repeat(65) }))
      .thenFails('unprocessable', /3 to 64/);
    ws.given(...team)
      .when(createKey({ name: 'abc' }))
      .then({ ...keyCreated, data: { ...keyCreated.data, name: 'abc' } });
  });

  test('an expiry that is not in the future: 422', () => {
    ws.given(...team)
      .when(createKey({ expiresAt: NOW }))
      .thenFails('unprocessable', 'expiresAt must lie in the future');
    ws.given(...team)
      .when(createKey({ expiresAt: '2029-12-31T23:59:59.000Z' }))
      .thenFails('unprocessable', 'expiresAt must lie in the future');
  });

  test('given a key, when an admin deletes it, then ApiKeyDeleted with its hash; another member may not (403)', () => {
    ws.given(...team, joined('bob'), keyCreated)
      .when({ type: 'DeleteApiKey', data: { keyId: 'k1', by: 'ann' } })
      .then({ type: 'ApiKeyDeleted', data: { workspaceId: W, keyId: 'k1', keyHash: 'h1', by: 'ann' } });
    ws.given(...team, joined('bob'), keyCreated)
      .when({ type: 'DeleteApiKey', data: { keyId: 'k1', by: 'bob' } })
      .thenFails('forbidden', "Only the key's creator or a workspace admin may delete this key");
  });

  test('deleting a deleted or unknown key: 404', () => {
    const del = { type: 'ApiKeyDeleted', data: { workspaceId: W, keyId: 'k1', keyHash: 'h1', by: 'ann' } };
    ws.given(...team, keyCreated, del)
      .when({ type: 'DeleteApiKey', data: { keyId: 'k1', by: 'ann' } })
      .thenFails('not_found', 'API key not found');
    ws.given(...team)
      .when({ type: 'DeleteApiKey', data: { keyId: 'k9', by: 'ann' } })
      .thenFails('not_found', 'API key not found');
  });

  test('a non-member deletes: 404', () => {
    ws.given(...team, keyCreated)
      .when({ type: 'DeleteApiKey', data: { keyId: 'k1', by: 'eve' } })
      .thenFails('not_found', 'Workspace not found');
  });

  test('fundingShortfall is null for a funded workspace', () => {
    expect(fundingShortfall(funded, usd(100))).toBeNull();
  });
});

describe('workspace: properties', () => {
  const users = ['ann', 'bob', 'carl', 'dora'];
  const user = fc.constantFrom(...users);
  const inv = fc.constantFrom('i1', 'i2', 'i3');
  const command: fc.Arbitrary<WorkspaceCommand> = fc.oneof(
    fc.record({ by: user, who: user, id: inv }).map(({ by, who, id }) => ({
      type: 'InviteMember' as const,
      data: { invitationId: id, email: `${who}@example.com`, inviteeUserId: who, by },
    })),
    fc
      .record({ who: user, id: inv })
      .map(({ who, id }) => ({ type: 'AcceptInvitation' as const, data: { invitationId: id, userId: who } })),
    fc
      .record({ who: user, id: inv })
      .map(({ who, id }) => ({ type: 'DeclineInvitation' as const, data: { invitationId: id, userId: who } })),
    fc.record({ by: user, who: user }).map(({ by, who }) => ({ type: 'RemoveMember' as const, data: { userId: who, by } })),
  );

  test('whatever commands arrive, a workspace keeps an admin, settled invitations stay settled, and a refused command changes nothing', () => {
    fc.assert(
      fc.property(fc.array(command, { maxLength: 40 }), (commands) => {
        let state = foldWith(workspaceDecider, team);
        for (const c of commands) {
          let events: Event[];
          try {
            events = decideWorkspace(c, state);
          } catch (err) {
            expect(err).toBeInstanceOf(DomainError);
            continue;
          }
          const before = state;
          state = foldWith(workspaceDecider, events, state);
          expect([...state.members.values()]).toContain('admin');
          for (const [id, i] of before.invitations) if (i.status !== 'pending') expect(state.invitations.get(id)!.status).toBe(i.status);
          // Only an accepted invitation or nothing adds a member; only an admin's removal takes one away.
          for (const m of state.members.keys())
            if (!before.members.has(m)) expect(events.map((e) => e.type)).toContain('InvitationAccepted');
        }
      }),
    );
  });
});
