import type { ProtectedEventType } from '../platform/crypto/protected-store';
import { streams } from '../platform/streams';
import { normalizeEmail } from './user';
import { claimStreamOf } from './usecases/user-by-email';

const user = (d: Record<string, unknown>) => `user:${String(d.userId)}`;

/**
 * The personal fields of the accounts' events, sealed with the person's data key (`user:{id}`) and
 * stored as the V2 of each type; erasing the person destroys that key (docs/SECURITY.md).
 * An invitation's address belongs to the invitee (an invitation names an existing user).
 */
export const accountsProtectedEvents: readonly ProtectedEventType[] = [
  { type: 'UserRegistered', storedAs: 'UserRegisteredV2', subject: user, fields: ['email', 'name', 'passwordHash'] },
  {
    type: 'EmailClaimed',
    storedAs: 'EmailClaimedV2',
    subject: user,
    fields: ['email'],
    // A claim stream named by the address's bare sha256 (before encryption; reversible with a list
    // of addresses) moves to its keyed-hash name. Taken: the address was released and signed up
    // again since, so the old claim's history gets a keyed name of its own.
    renameLegacyStream(stream, data, lookupHash) {
      const email = normalizeEmail(String(data.email));
      if (stream !== streams.legacyEmail(email)) return undefined;
      return { to: claimStreamOf({ lookupHash }, email), taken: streams.emailClaim(lookupHash(`email-before-encryption:${email}`)) };
    },
  },
  { type: 'InvitationSent', storedAs: 'InvitationSentV2', subject: user, fields: ['email'] },
  { type: 'InvitationRevoked', storedAs: 'InvitationRevokedV2', subject: user, fields: ['email'] },
];
