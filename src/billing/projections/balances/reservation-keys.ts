import { wsTag } from '../../../platform/projections/keyspace';

/**
 * Open reservations live outside the projection's generations (they belong to requests in
 * flight, not to history), beside it under shared keys:
 *
 * Every one carries the workspace's hash tag ({ws:<wsId>}: src/platform/projections/keyspace.ts), so a
 * script reads and writes them on one Redis Cluster node:
 *
 *   resv:{ws:<wsId>}        hash requestId → reserved nano-USD
 *   resv-total:{ws:<wsId>}  sum of that hash
 *   resv-open:{ws:<wsId>}   sorted set "wsId:requestId" scored by reservation time (ms), for the sweeper
 *   resv-key:{ws:<wsId>}    hash requestId → keyId (the key a reservation counts against)
 *   resv-key-total:{ws:<wsId>}:{keyId}  sum of that key's open reservations (deleted when it reaches 0)
 *   resv-member:{ws:<wsId>} hash requestId → userId (who created the key: the member budget it counts against)
 *   resv-member-total:{ws:<wsId>}:{userId}  sum of that member's open reservations (deleted at 0)
 *
 * Budgets, key owners and spend per period live in the balances read model (./projection.ts), so
 * the reserve script reads balance, spend and budgets from one generation.
 */
export function reservationKeys(shared: (...parts: string[]) => string, workspaceId: string) {
  const ws = wsTag(workspaceId);
  return {
    held: shared('resv', ws),
    total: shared('resv-total', ws),
    open: shared('resv-open', ws),
    owner: shared('resv-key', ws),
    /** + keyId */
    keyTotalPrefix: shared('resv-key-total', ws, ''),
    member: shared('resv-member', ws),
    /** + userId */
    memberTotalPrefix: shared('resv-member-total', ws, ''),
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
