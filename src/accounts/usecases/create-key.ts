import type { EventMetadata } from '../../platform/eventstore/port';
import { workspaceFunding } from '../../billing';
import type { WorkspaceFunding } from '../funding';
import { hashKey } from '../projections/key-index/queries';
import { displayPrefix, generateKeySecret, lastFour } from '../key-secrets';
import type { Services } from '../../services';
import { runWorkspaceCommand, type WorkspaceDeps } from './workspace-command';

/** The scopes a key gets when the request names none. */
export const DEFAULT_SCOPES = ['inference'];

export interface CreatedKey {
  keyId: string;
  /** The only time the secret is shown: the event keeps its hash, prefix and last four. */
  secret: string;
  prefix: string;
  last4: string;
  scopes: string[];
  expiresAt: string | null;
}

/**
 * A member creates an API key in a funded workspace (billing says whether it is). The key works on
 * the next request: the answer waits until the key index has it.
 */
export async function createKey(
  s: WorkspaceDeps & Pick<Services, 'config'>,
  cmd: { workspaceId: string; name: string; scopes?: string[]; expiresAt: string | null; by: string; now: Date; metadata: EventMetadata },
): Promise<CreatedKey> {
  const { funding, requiredDepositNanoUsd }: WorkspaceFunding = await workspaceFunding(s, cmd.workspaceId);
  const secret = generateKeySecret();
  const keyId = s.newId();
  const scopes = cmd.scopes ? [...new Set(cmd.scopes)] : DEFAULT_SCOPES;
  const key = { keyId, secret, prefix: displayPrefix(secret), last4: lastFour(secret), scopes, expiresAt: cmd.expiresAt };
  await runWorkspaceCommand(
    s,
    cmd.workspaceId,
    {
      type: 'CreateApiKey',
      data: {
        keyId,
        name: cmd.name,
        keyHash: hashKey(secret),
        prefix: key.prefix,
        last4: key.last4,
        scopes,
        expiresAt: cmd.expiresAt,
        by: cmd.by,
        now: cmd.now.toISOString(),
        funding,
        requiredDepositNanoUsd,
      },
    },
    cmd.metadata,
  );
  return key;
}
