import type { ProtectedEventType } from '../platform/crypto/protected-store';

const user = (d: Record<string, unknown>) => `user:${String(d.userId)}`;

/**
 * The personal fields of the accounts' events, sealed with the person's data key (`user:{id}`) and
 * stored as the V2 of each type; erasing the person destroys that key (docs/SECURITY.md).
 * An invitation's address belongs to the invitee (an invitation names an existing user).
 */
export const accountsProtectedEvents: readonly ProtectedEventType[] = [
  { type: 'UserRegistered', storedAs: 'UserRegisteredV2', subject: user, fields: ['email', 'name', 'passwordHash'] },
  { type: 'EmailClaimed', storedAs: 'EmailClaimedV2', subject: user, fields: ['email'] },
  { type: 'InvitationSent', storedAs: 'InvitationSentV2', subject: user, fields: ['email'] },
  { type: 'InvitationRevoked', storedAs: 'InvitationRevokedV2', subject: user, fields: ['email'] },
];
