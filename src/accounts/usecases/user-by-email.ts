import { emailClaimDecider, normalizeEmail, userDecider, type UserState } from '../user';
import { streams } from '../../platform/streams';
import { loadState } from '../../platform/eventstore/command-handler';
import type { EventStore } from '../../platform/eventstore/port';
import type { Services } from '../../services';

export type LookupDeps = { store: EventStore; lookupHash: Services['lookupHash'] };

/** Where an address's claim is written: email-{HMAC of the normalized address}. */
export const claimStreamOf = (s: Pick<LookupDeps, 'lookupHash'>, email: string) =>
  streams.emailClaim(s.lookupHash(`email:${normalizeEmail(email)}`));

/**
 * The claim stream of an address: email-{hmac} (where every claim is written), else the sha256 name
 * a store written before encryption used (docs/SECURITY.md, "Migration"), when that one is claimed.
 */
export async function emailClaimOf(s: LookupDeps, email: string) {
  const normalized = normalizeEmail(email);
  const stream = claimStreamOf(s, normalized);
  const claim = await loadState(s.store, stream, emailClaimDecider);
  if (claim.state.claimedBy !== null || claim.revision !== null) return { stream, claim };
  const legacyStream = streams.legacyEmail(normalized);
  const legacy = await loadState(s.store, legacyStream, emailClaimDecider);
  return legacy.state.claimedBy !== null ? { stream: legacyStream, claim: legacy } : { stream, claim };
}

/** The user an e-mail claim names, folded from user-{userId}; null when no one claimed the address. Not necessarily registered. */
export async function userByEmail(s: LookupDeps, email: string): Promise<UserState | null> {
  const { claim } = await emailClaimOf(s, email);
  return claim.state.claimedBy ? (await loadState(s.store, streams.user(claim.state.claimedBy), userDecider)).state : null;
}
