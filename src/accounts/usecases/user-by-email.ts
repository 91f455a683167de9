import { emailClaimDecider, userDecider, type UserState } from '../user';
import { streams } from '../../platform/streams';
import { loadState } from '../../platform/eventstore/command-handler';
import type { EventStore } from '../../platform/eventstore/port';

/** The user an e-mail claim names, folded from user-{userId}; null when no one claimed the address. Not necessarily registered. */
export async function userByEmail(store: EventStore, email: string): Promise<UserState | null> {
  const claim = await loadState(store, streams.email(email), emailClaimDecider);
  return claim.state.claimedBy ? (await loadState(store, streams.user(claim.state.claimedBy), userDecider)).state : null;
}
