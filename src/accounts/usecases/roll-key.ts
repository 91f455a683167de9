import type { ApiKeyRolled } from '../events';
import type { EventMetadata } from '../../platform/eventstore/port';
import { keysOf, type ApiKeyView } from '../projections/api-keys/queries';
import { hashKey } from '../projections/key-index/queries';
import { displayPrefix, generateKeySecret, lastFour } from '../key-secrets';
import type { Services } from '../../services';
import { runWorkspaceCommand, type WorkspaceDeps } from './workspace-command';

export interface RolledKey {
  /** The new secret, shown this once. */
  secret: string;
  rolled: ApiKeyRolled['data'];
  /** The key as the read model has it after the roll (name, scopes, expiry). */
  key: ApiKeyView | undefined;
}

/**
 * The key's creator or an admin gives it a new secret; the previous one works for the grace period. The new secret
 * works, and a secret rolled without grace fails, on the next request.
 */
export async function rollKey(
  s: WorkspaceDeps & Pick<Services, 'readModels'>,
  cmd: { workspaceId: string; keyId: string; gracePeriodSeconds: number; by: string; now: Date; metadata: EventMetadata },
): Promise<RolledKey> {
  const { workspaceId, keyId } = cmd;
  const secret = generateKeySecret();
  const done = await runWorkspaceCommand(
    s,
    workspaceId,
    {
      type: 'RollApiKey',
      data: {
        keyId,
        keyHash: hashKey(secret),
        prefix: displayPrefix(secret),
        last4: lastFour(secret),
        gracePeriodSeconds: cmd.gracePeriodSeconds,
        now: cmd.now.toISOString(),
        by: cmd.by,
      },
    },
    cmd.metadata,
  );
  const rolled = done.events[0] as ApiKeyRolled;
  const key = (await keysOf(s.readModels, workspaceId)).find((k) => k.keyId === keyId);
  return { secret, rolled: rolled.data, key };
}
