import { randomUUID } from 'node:crypto';
import { liveChannel } from '../../src/billing/projections/usage/projection';
import type { Services } from '../../src/services';

/**
 * GET /usage/live sends its headers before it subscribes to the workspace's channel, so a 200 alone
 * does not mean a debit made now will be pushed. This publishes a probe on that channel (as the usage
 * projection publishes a debit) until the stream carries it: then the subscription is in place.
 * The probes are `event: usage` blocks too; `isProbe` tells them apart so tests can leave them out.
 */
export async function untilLiveSubscribed(s: Services, workspaceId: string, blocks: () => string[], timeoutMs = 15_000): Promise<void> {
  const id = randomUUID();
  const channel = liveChannel((...p) => s.ks.shared(...p), workspaceId);
  const deadline = Date.now() + timeoutMs;
  while (!blocks().some((b) => b.includes(id))) {
    if (Date.now() > deadline) throw new Error(`the live usage stream of ${workspaceId} never carried a probe`);
    await s.redis.spublish(channel, JSON.stringify({ probe: id }));
    await new Promise((r) => setTimeout(r, 50));
  }
}

export const isProbe = (block: string) => block.includes('data: {"probe":');
