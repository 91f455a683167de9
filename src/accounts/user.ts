import { createHash } from 'node:crypto';
import { conflict, DomainError } from '../platform/errors';
import { assertNever, type EventRecord } from '../platform/event';
import type { UsagePolicyAccepted } from './policy/events';
import type { EmailClaimed, EmailReleased, UserErased, UserLoggedIn, UserRegistered } from './events';

/** The events of user-{userId}. */
export type UserStreamEvent = UserRegistered | UserLoggedIn | UsagePolicyAccepted | UserErased;

/** E-mail addresses are compared and stored trimmed and lowercased. */
export const normalizeEmail = (email: string) => email.trim().toLowerCase();

/**
 * The personal workspace's id is derived from the user id, so creating it on the first login is
 * idempotent: a retry after a crash between the two appends finds the same stream.
 */
export function personalWorkspaceId(userId: string): string {
  const h = createHash('sha256').update(`personal-workspace:${userId}`).digest('hex');
  // Shaped like a v4 uuid (variant and version bits set) so ids look alike everywhere.
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-${((parseInt(h[16], 16) & 3) | 8).toString(16)}${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

// ── user-{userId} ────────────────────────────────────────────────────────────────────────────────

export interface UserState {
  /** False again once erased: an erased user cannot log in, and their address is free. */
  registered: boolean;
  erased: boolean;
  userId: string;
  email: string;
  name: string;
  passwordHash: string;
  logins: number;
}

export type UserCommand =
  | { type: 'RegisterUser'; data: { userId: string; email: string; name: string; passwordHash: string } }
  | { type: 'RecordLogin'; data: { userId: string } };

export const userDecider = {
  initial: (): UserState => ({ registered: false, erased: false, userId: '', email: '', name: '', passwordHash: '', logins: 0 }),
  evolve(state: UserState, event: EventRecord<UserStreamEvent>): UserState {
    switch (event.type) {
      case 'UserRegistered': {
        const d = event.data;
        return { ...state, registered: true, userId: d.userId, email: d.email, name: d.name, passwordHash: d.passwordHash };
      }
      case 'UserLoggedIn':
        return { ...state, logins: state.logins + 1 };
      case 'UsagePolicyAccepted':
        return state;
      case 'UserErased':
        return { ...state, registered: false, erased: true };
      default:
        return assertNever(event);
    }
  },
};

export interface UserDecision {
  events: (UserRegistered | UserLoggedIn)[];
  /** RecordLogin: true on the user's first login (which creates the personal workspace). */
  firstLogin: boolean;
}

export function decideUser(command: UserCommand, state: UserState): UserDecision {
  switch (command.type) {
    case 'RegisterUser': {
      if (state.registered || state.erased) throw conflict('An account with this e-mail already exists');
      const d = command.data;
      return {
        events: [
          {
            type: 'UserRegistered',
            data: { userId: d.userId, email: normalizeEmail(d.email), name: d.name, passwordHash: d.passwordHash },
          },
        ],
        firstLogin: false,
      };
    }
    case 'RecordLogin':
      if (!state.registered) throw new DomainError('unauthenticated', 'Invalid e-mail or password');
      return { events: [{ type: 'UserLoggedIn', data: { userId: command.data.userId } }], firstLogin: state.logins === 0 };
  }
}

// ── email-{hmac(email)} ────────────────────────────────────────────────────────────────────────

export interface EmailClaimState {
  claimedBy: string | null;
}

export const emailClaimDecider = {
  initial: (): EmailClaimState => ({ claimedBy: null }),
  evolve(state: EmailClaimState, event: EventRecord<EmailClaimed | EmailReleased>): EmailClaimState {
    switch (event.type) {
      case 'EmailClaimed':
        return state.claimedBy === null ? { claimedBy: event.data.userId } : state;
      case 'EmailReleased':
        return state.claimedBy === event.data.userId ? { claimedBy: null } : state;
      default:
        return assertNever(event);
    }
  },
};

export function decideClaimEmail(cmd: { email: string; userId: string }, state: EmailClaimState): EmailClaimed[] {
  if (state.claimedBy !== null) throw conflict('An account with this e-mail already exists');
  return [{ type: 'EmailClaimed', data: { email: normalizeEmail(cmd.email), userId: cmd.userId } }];
}
