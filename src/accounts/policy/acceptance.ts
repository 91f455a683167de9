import { DomainError } from '../../platform/errors';
import type { UserStreamEvent } from '../user';
import { assertNever, type EventRecord } from '../../platform/event';
import type { UsagePolicyAccepted } from './events';

/** What the user stream says about the usage policy: the last version the user accepted. */
export interface AcceptanceState {
  registered: boolean;
  acceptedVersion: string | null;
}

export const acceptanceDecider = {
  initial: (): AcceptanceState => ({ registered: false, acceptedVersion: null }),
  evolve(state: AcceptanceState, event: EventRecord<UserStreamEvent>): AcceptanceState {
    switch (event.type) {
      case 'UserRegistered':
        return { ...state, registered: true };
      case 'UsagePolicyAccepted':
        return { ...state, acceptedVersion: event.data.version };
      case 'UserLoggedIn':
        return state;
      case 'UserErased':
        return { ...state, registered: false };
      default:
        return assertNever(event);
    }
  },
};

export const policyAccepted = (userId: string, version: string): UsagePolicyAccepted => ({
  type: 'UsagePolicyAccepted',
  data: { userId, version },
});

/** Accepting the current version once; accepting it again changes nothing. */
export function decideAcceptPolicy(
  cmd: { userId: string; version: string; currentVersion: string },
  state: AcceptanceState,
): UsagePolicyAccepted[] {
  if (!state.registered) throw new DomainError('not_found', 'User not found');
  if (cmd.version !== cmd.currentVersion) {
    throw new DomainError('unprocessable', `version must be the current usage policy version, ${cmd.currentVersion}`);
  }
  if (state.acceptedVersion === cmd.currentVersion) return [];
  return [policyAccepted(cmd.userId, cmd.version)];
}
