import { decideWorkspace, workspaceDecider, WorkspaceCommand, WorkspaceState } from '../../../src/accounts/workspace';
import { scenario } from '../../support/gwt';

const ws = scenario<WorkspaceState, WorkspaceCommand>(workspaceDecider, decideWorkspace);
const W = 'w1';
const NOW = '2030-01-01T00:00:00.000Z';
const team = [
  { type: 'WorkspaceCreated', data: { workspaceId: W, name: 'Team', personal: false, createdBy: 'ann' } },
  { type: 'MemberJoined', data: { workspaceId: W, userId: 'ann', role: 'admin' } },
  { type: 'MemberJoined', data: { workspaceId: W, userId: 'bob', role: 'member' } },
];
const keyCreated = (expiresAt: string | null = null) => ({
  type: 'ApiKeyCreated',
  data: {
    workspaceId: W,
    keyId: 'k1',
    name: 'prod',
    keyHash: 'h1',
    prefix: 'tg_aaaaa',
    last4: 'aaaa',
    scopes: ['inference'],
    expiresAt,
    createdBy: 'ann',
  },
});
const roll = (over: Partial<Extract<WorkspaceCommand, { type: 'RollApiKey' }>['data']> = {}): WorkspaceCommand => ({
  type: 'RollApiKey',
  data: { keyId: 'k1', keyHash: 'h2', prefix: 'tg_bbbbb', last4: 'bbbb', gracePeriodSeconds: 0, now: NOW, by: 'ann', ...over },
});
const rolled = (over: Record<string, unknown> = {}) => ({
  type: 'ApiKeyRolled',
  data: {
    workspaceId: W,
    keyId: 'k1',
    keyHash: 'h2',
    prefix: 'tg_bbbbb',
    last4: 'bbbb',
    previousKeyHash: 'h1',
    gracePeriodSeconds: 0,
    previousKeyValidUntil: NOW,
    by: 'ann',
    ...over,
  },
});

describe('RollApiKey', () => {
  test('the creator rolls a live key; without grace the old secret ends at the roll', () =>
    ws
      .given(...team, keyCreated())
      .when(roll())
      .then(rolled()));

  // F-2: a member's budget caps the keys they created; a secret of someone else's key would not be capped.
  const bobsKey = { type: 'ApiKeyCreated', data: { ...keyCreated().data, createdBy: 'bob' } };
  test("a member may not roll another member's key (403); nothing is appended", () =>
    ws
      .given(...team, keyCreated())
      .when(roll({ by: 'bob', gracePeriodSeconds: 86_400 }))
      .thenFails('forbidden', "Only the key's creator or a workspace admin may roll this key"));
  test("a member may not delete another member's key (403)", () =>
    ws
      .given(...team, keyCreated())
      .when({ type: 'DeleteApiKey', data: { keyId: 'k1', by: 'bob' } })
      .thenFails('forbidden', "Only the key's creator or a workspace admin may delete this key"));
  test('a member rolls and deletes their own key', () => {
    ws.given(...team, bobsKey)
      .when(roll({ by: 'bob' }))
      .then(rolled({ by: 'bob' }));
    ws.given(...team, bobsKey)
      .when({ type: 'DeleteApiKey', data: { keyId: 'k1', by: 'bob' } })
      .then({ type: 'ApiKeyDeleted', data: { workspaceId: W, keyId: 'k1', keyHash: 'h1', by: 'bob' } });
  });
  test("an admin rolls and deletes a member's key", () => {
    ws.given(...team, bobsKey)
      .when(roll())
      .then(rolled());
    ws.given(...team, bobsKey)
      .when({ type: 'DeleteApiKey', data: { keyId: 'k1', by: 'ann' } })
      .then({ type: 'ApiKeyDeleted', data: { workspaceId: W, keyId: 'k1', keyHash: 'h1', by: 'ann' } });
  });

  test('a grace period ends that many seconds later', () =>
    ws
      .given(...team, keyCreated())
      .when(roll({ gracePeriodSeconds: 86_400 }))
      .then(rolled({ gracePeriodSeconds: 86_400, previousKeyValidUntil: '2030-01-02T00:00:00.000Z' })));

  test("the old secret never outlives the key's own expiry", () =>
    ws
      .given(...team, keyCreated('2030-01-01T00:10:00.000Z'))
      .when(roll({ gracePeriodSeconds: 3600 }))
      .then(rolled({ gracePeriodSeconds: 3600, previousKeyValidUntil: '2030-01-01T00:10:00.000Z' })));

  test('a second roll replaces the current hash, not the first one', () =>
    ws
      .given(...team, keyCreated(), rolled())
      .when(roll({ keyHash: 'h3', prefix: 'tg_ccccc', last4: 'cccc' }))
      .then(rolled({ keyHash: 'h3', prefix: 'tg_ccccc', last4: 'cccc', previousKeyHash: 'h2' })));

  test.each([-1, 86_401, 1.5, Number.NaN])('a grace period of %p is refused', (g) =>
    ws
      .given(...team, keyCreated())
      .when(roll({ gracePeriodSeconds: g }))
      .thenFails('unprocessable', /gracePeriodSeconds must be a whole number from 0 to 86400/),
  );

  test('a non-member sees no workspace', () =>
    ws
      .given(...team, keyCreated())
      .when(roll({ by: 'eve' }))
      .thenFails('not_found', 'Workspace not found'));
  test('an unknown key', () =>
    ws
      .given(...team)
      .when(roll())
      .thenFails('not_found', 'API key not found'));
  test('a deleted key', () =>
    ws
      .given(...team, keyCreated(), { type: 'ApiKeyDeleted', data: { workspaceId: W, keyId: 'k1', keyHash: 'h1', by: 'ann' } })
      .when(roll())
      .thenFails('not_found', 'API key not found'));
  test('an expired key', () =>
    ws
      .given(...team, keyCreated('2029-12-31T00:00:00.000Z'))
      .when(roll())
      .thenFails('conflict', /expired/));
  test('the same secret again', () =>
    ws
      .given(...team, keyCreated())
      .when(roll({ keyHash: 'h1' }))
      .thenFails('conflict', /differ/));

  test('deleting a rolled key names its current hash', () =>
    ws
      .given(...team, keyCreated(), rolled())
      .when({ type: 'DeleteApiKey', data: { keyId: 'k1', by: 'ann' } })
      .then({ type: 'ApiKeyDeleted', data: { workspaceId: W, keyId: 'k1', keyHash: 'h2', by: 'ann' } }));
});
