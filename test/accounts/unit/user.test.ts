import {
  decideClaimEmail,
  decideUser,
  emailClaimDecider,
  EmailClaimState,
  normalizeEmail,
  personalWorkspaceId,
  userDecider,
  UserCommand,
  UserState,
} from '../../../src/accounts/user';
import { foldWith, scenario } from '../../support/gwt';

const user = scenario<UserState, UserCommand>(userDecider, (c, s) => decideUser(c, s).events);
const claim = scenario<EmailClaimState, { email: string; userId: string }>(emailClaimDecider, decideClaimEmail);

const registered = { type: 'UserRegistered', data: { userId: 'u1', email: 'ann@example.com', name: 'Ann', passwordHash: 'scrypt$…' } };
const loggedIn = { type: 'UserLoggedIn', data: { userId: 'u1' } };

describe('user aggregate', () => {
  test('given nothing, when registering, then UserRegistered with the e-mail normalized', () => {
    user
      .given()
      .when({ type: 'RegisterUser', data: { userId: 'u1', email: ' Ann@Example.COM ', name: 'Ann', passwordHash: 'scrypt$…' } })
      .then(registered);
  });

  test('given a registered user, when registering again, then 409 and nothing', () => {
    user
      .given(registered)
      .when({ type: 'RegisterUser', data: { userId: 'u1', email: 'ann@example.com', name: 'Ann', passwordHash: 'x' } })
      .thenFails('conflict', 'An account with this e-mail already exists');
  });

  test('given a registered user, when logging in, then UserLoggedIn', () => {
    user
      .given(registered)
      .when({ type: 'RecordLogin', data: { userId: 'u1' } })
      .then(loggedIn);
  });

  test('given nothing, when logging in, then 401 without saying the account is missing', () => {
    user
      .given()
      .when({ type: 'RecordLogin', data: { userId: 'u1' } })
      .thenFails('unauthenticated', 'Invalid e-mail or password');
  });

  test('the first login is the one that creates the personal workspace; later ones are not', () => {
    const s0 = foldWith(userDecider, [registered]);
    expect(decideUser({ type: 'RecordLogin', data: { userId: 'u1' } }, s0).firstLogin).toBe(true);
    const s1 = foldWith(userDecider, [loggedIn], s0);
    expect(decideUser({ type: 'RecordLogin', data: { userId: 'u1' } }, s1).firstLogin).toBe(false);
  });

  test('the state never holds more than the stored hash', () => {
    const s = foldWith(userDecider, [registered, loggedIn, loggedIn]);
    expect(s).toEqual({
      registered: true,
      erased: false,
      userId: 'u1',
      email: 'ann@example.com',
      name: 'Ann',
      passwordHash: 'scrypt$…',
      logins: 2,
    });
  });
});

describe('erasure', () => {
  const erased = { type: 'UserErased', data: { userId: 'u1', by: 'u1' } };

  test('given an erased user, when logging in, then 401; when registering the same id again, then 409', () => {
    user
      .given(registered, erased)
      .when({ type: 'RecordLogin', data: { userId: 'u1' } })
      .thenFails('unauthenticated', 'Invalid e-mail or password');
    user
      .given(registered, erased)
      .when({ type: 'RegisterUser', data: { userId: 'u1', email: 'ann@example.com', name: 'Ann', passwordHash: 'x' } })
      .thenFails('conflict', 'An account with this e-mail already exists');
  });

  test('given a claim released by its erased owner, when claiming again, then EmailClaimed for the new user', () => {
    claim
      .given({ type: 'EmailClaimed', data: { email: 'ann@example.com', userId: 'u1' } }, { type: 'EmailReleased', data: { userId: 'u1' } })
      .when({ email: 'ann@example.com', userId: 'u9' })
      .then({ type: 'EmailClaimed', data: { email: 'ann@example.com', userId: 'u9' } });
  });

  test('a release by someone who does not hold the claim changes nothing', () => {
    const s = foldWith(emailClaimDecider, [
      { type: 'EmailClaimed', data: { email: 'a@b.c', userId: 'u1' } },
      { type: 'EmailReleased', data: { userId: 'u2' } },
    ]);
    expect(s.claimedBy).toBe('u1');
  });
});

describe('e-mail claim', () => {
  test('given an unclaimed address, when claiming, then EmailClaimed (normalized)', () => {
    claim
      .given()
      .when({ email: 'Bob@Example.com', userId: 'u2' })
      .then({ type: 'EmailClaimed', data: { email: 'bob@example.com', userId: 'u2' } });
  });

  test('given a claimed address, when claiming it again (any user), then 409', () => {
    claim
      .given({ type: 'EmailClaimed', data: { email: 'bob@example.com', userId: 'u2' } })
      .when({ email: 'bob@example.com', userId: 'u3' })
      .thenFails('conflict', 'An account with this e-mail already exists');
  });
});

describe('helpers', () => {
  test('normalizeEmail trims and lowercases', () => {
    expect(normalizeEmail('  MiXeD@Case.Org ')).toBe('mixed@case.org');
  });

  test('the personal workspace id is derived, stable, uuid-shaped and distinct per user', () => {
    const a = personalWorkspaceId('u1');
    expect(a).toBe(personalWorkspaceId('u1'));
    expect(a).not.toBe(personalWorkspaceId('u2'));
    expect(a).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  });
});
