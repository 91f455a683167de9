import { wsTag } from '../../../platform/projections/keyspace';

/**
 * Open reservations live outside the projection's generations (they belong to requests in
 * flight, not to history), beside it under shared keys:
 *
 * Both carry the workspace's hash tag ({ws:<wsId>}: src/platform/projections/keyspace.ts), so the
 * scripts touch them on one Redis Cluster slot with the workspace's balances:
 *
 *   resv:{ws:<wsId>}   hash, the workspace's holds (./reserve.inc.lua):
 *                   {requestId}    "amount" or "amount\0keyId" or "amount\0keyId\0userId": the hold
 *                                  (nano-USD) and the key and key creator (member budget) it counts against
 *                   =total         sum of the holds
 *                   =k:{keyId}     sum of that key's holds
 *                   =m:{userId}    sum of the holds of that member's keys
 *                 A sum is deleted when it reaches 0, so a workspace holding nothing has no hash.
 *   resv-open:{ws:<wsId>}  sorted set "wsId:requestId" scored by reservation time (ms), for the
 *                 sweeper (which finds each workspace's by a SCAN of every primary)
 *
 * One hash, not a hash per role and a string per sum (as before issue 31): a hold's release is an
 * HGET, an HINCRBY per sum, one HDEL and the ZREM, and every sum moves in the hash the scripts are
 * given. Budgets, key owners and spend per period live in the balances read model (./projection.ts),
 * so the reserve script reads balance, spend and budgets from one generation.
 */
export function reservationKeys(shared: (...parts: string[]) => string, workspaceId: string) {
  return {
    held: shared('resv', wsTag(workspaceId)),
    open: shared('resv-open', wsTag(workspaceId)),
  };
}

/** The fields of the sums in a workspace's holds hash (reservationKeys().held). */
export const HELD_TOTAL = '=total';
export const heldByKeyField = (keyId: string) => `=k:${keyId}`;
export const heldByMemberField = (userId: string) => `=m:${userId}`;

export type ReservationKeys = ReturnType<typeof reservationKeys>;

/** The RELEASE and TO_PENDING scripts' keys and arguments for one request (./reservation-scripts.ts). */
export function releaseCall(k: ReservationKeys, workspaceId: string, requestId: string) {
  return {
    keys: { held: k.held, open: k.open },
    args: { requestId, openMember: `${workspaceId}:${requestId}` },
  };
}
