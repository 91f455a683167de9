import type { ApiKeyCreated, ApiKeyDeleted } from '../../domain/accounts/events';
import type { RecordedEvent } from '../../eventstore/port';
import type { Projection, ProjectionTx } from '../projection';

export const API_KEYS = 'api-keys';

/**
 * A workspace's keys for its key list (the secret is never anywhere; the hash stays out of the list).
 * The inference hot path reads the key index (../key-index), not this.
 *
 *   rm:api-keys:{gen}:ws:{wsId}  hash: keyId → JSON {keyId, name, prefix, last4, scopes, expiresAt, createdBy, created}
 */
export const apiKeysProjection: Projection = {
  name: API_KEYS,
  handles: new Set(['ApiKeyCreated', 'ApiKeyDeleted']),
  apply(event: RecordedEvent, tx: ProjectionTx) {
    if (event.type === 'ApiKeyCreated') {
      const d = event.data as ApiKeyCreated['data'];
      const rec: ApiKeyListEntry = {
        keyId: d.keyId,
        name: d.name,
        prefix: d.prefix,
        last4: d.last4,
        scopes: d.scopes,
        expiresAt: d.expiresAt,
        createdBy: d.createdBy,
        created: event.created,
      };
      tx.multi.hset(tx.key('ws', d.workspaceId), d.keyId, JSON.stringify(rec));
    } else if (event.type === 'ApiKeyDeleted') {
      const d = event.data as ApiKeyDeleted['data'];
      tx.multi.hdel(tx.key('ws', d.workspaceId), d.keyId);
    }
  },
};

export interface ApiKeyListEntry {
  keyId: string;
  name: string;
  prefix: string;
  last4: string;
  scopes: string[];
  expiresAt: string | null;
  createdBy: string;
  created: string;
}
