import type { ReadModels } from '../../../../platform/projections/read-models';
import { POLICY_ACCEPTANCE } from './projection';

export interface Acceptance {
  version: string;
  /** ISO-8601 */
  accepted: string;
}

export async function acceptanceOf(rm: ReadModels, userId: string): Promise<Acceptance | null> {
  const k = await rm.keys(POLICY_ACCEPTANCE);
  const h = await rm.redis.hgetall(k('user', userId));
  return h.version ? { version: h.version, accepted: h.accepted } : null;
}
