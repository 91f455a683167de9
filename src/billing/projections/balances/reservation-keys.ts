/**
 * Open reservations live outside the projection's generations (they belong to requests in
 * flight, not to history), beside it under shared keys:
 *
 *   resv:{wsId}        hash requestId → reserved nano-USD
 *   resv-total:{wsId}  sum of that hash
 *   resv-open          sorted set "wsId:requestId" scored by reservation time (ms), for the sweeper
 *   resv-key:{wsId}    hash requestId → keyId (the key a reservation counts against)
 *   resv-key-total:{keyId}  sum of that key's open reservations (deleted when it reaches 0)
 *   resv-member:{wsId} hash requestId → userId (who created the key: the member budget it counts against)
 *   resv-member-total:{wsId}:{userId}  sum of that member's open reservations (deleted at 0)
 *
 * Budgets, key owners and spend per period live in the balances read model (./projection.ts), so
 * the reserve script reads balance, spend and budgets from one generation.
 */
export function reservationKeys(shared: (...parts: string[]) => string, workspaceId: string) {
  return {
    held: shared('resv', workspaceId),
    total: shared('resv-total', workspaceId),
    open: shared('resv-open'),
    owner: shared('resv-key', workspaceId),
    /** + keyId */
    keyTotalPrefix: shared('resv-key-total', ''),
    member: shared('resv-member', workspaceId),
    /** + userId */
    memberTotalPrefix: shared('resv-member-total', workspaceId, ''),
  };
}

export type ReservationKeys = ReturnType<typeof reservationKeys>;

/** The RELEASE and TO_PENDING scripts' keys and arguments for one request (./reservation-scripts.ts). */
export function releaseCall(k: ReservationKeys, workspaceId: string, requestId: string) {
  return {
    keys: { held: k.held, total: k.total, open: k.open },
    args: {
      requestId,
      openMember: `${workspaceId}:${requestId}`,
      owner: k.owner,
      keyTotalPrefix: k.keyTotalPrefix,
      member: k.member,
      memberTotalPrefix: k.memberTotalPrefix,
    },
  };
}
