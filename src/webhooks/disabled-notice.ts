import type { Redis } from 'ioredis';
import { clearNotice } from '../accounts';
import type { Keyspace } from '../platform/projections/keyspace';

/** The /v1/me notice that tells a workspace's admins an endpoint was disabled: one per endpoint. */
export const disabledNoticeId = (endpointId: string) => `webhook-endpoint-disabled-${endpointId}`;

/** The endpoint was enabled again or deleted: the notice no longer holds. */
export function clearDisabledNotice(s: { redis: Redis; ks: Keyspace }, workspaceId: string, endpointId: string): Promise<void> {
  return clearNotice(s.redis, s.ks, { workspaceId }, disabledNoticeId(endpointId));
}
