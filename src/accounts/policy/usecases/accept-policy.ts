import { acceptanceDecider, decideAcceptPolicy } from '../acceptance';
import { usagePolicyOf } from '../policy-document';
import { streams } from '../../../platform/streams';
import { handleCommand } from '../../../platform/eventstore/command-handler';
import type { EventMetadata } from '../../../platform/eventstore/port';
import { readYourWrites } from '../../../platform/projections/read-your-writes';
import type { Services } from '../../../services';

/**
 * A user accepts the current usage-policy version (UsagePolicyAccepted on user-{userId}; again
 * changes nothing). The next key creation must see it: the answer waits for the projections.
 */
export async function acceptPolicy(
  s: Pick<Services, 'store' | 'newId' | 'progress' | 'config' | 'log'>,
  cmd: { userId: string; version: string; metadata: EventMetadata },
): Promise<void> {
  const currentVersion = usagePolicyOf(s.config).version;
  const done = await handleCommand(
    s.store,
    streams.user(cmd.userId),
    acceptanceDecider,
    (st) => ({ events: decideAcceptPolicy({ userId: cmd.userId, version: cmd.version, currentVersion }, st), result: undefined }),
    { metadata: cmd.metadata, newId: s.newId },
  );
  await readYourWrites(s, done.appended);
}
