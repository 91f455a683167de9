/**
 * The marker that ends a person's live usage streams of a workspace, sent on the workspace's live
 * channel itself (`liveChannel`) so it takes its place in the same order as the debits:
 *
 * - `removed` and `left` are published by the usage projection as it applies MemberRemoved and
 *   MemberLeft, in the same MULTI as the debits around them. A debit of a call made after the
 *   removal has a later position, so it is published after the marker, and the stream has closed
 *   by then (the hub hands one connection's messages to listeners in order, synchronously).
 * - `logged_out` is published by POST /v1/logout before it answers, naming the session (the hash
 *   of its token): only the streams of that session end.
 *
 * A marker is never forwarded to a client as usage: every stream reads and drops it.
 */
export type AccessEndedReason = 'removed' | 'left' | 'logged_out';

export interface AccessEnded {
  userId: string;
  reason: AccessEndedReason;
  /** SHA-256 of the session token, for `logged_out` only. */
  session?: string;
}

const PREFIX = '{"accessEnded":';

export const accessEndedMessage = (a: AccessEnded): string => PREFIX + JSON.stringify(a) + '}';

/** The marker in a live-channel message, or null for a debit (a prefix test: debits are never parsed here). */
export function accessEndedOf(msg: string): AccessEnded | null {
  if (!msg.startsWith(PREFIX)) return null;
  try {
    return (JSON.parse(msg) as { accessEnded: AccessEnded }).accessEnded;
  } catch {
    return null;
  }
}

/** What the closing `event: closed` frame says. */
export const ACCESS_ENDED_TEXT: Record<AccessEndedReason, string> = {
  removed: 'Access to this workspace ended (removed)',
  left: 'Access to this workspace ended (left)',
  logged_out: 'Access to this workspace ended (logged out)',
};
