import type { ApiKeyCreated, ApiKeyDeleted, RateLimitChanged } from '../../domain/accounts/events';
import type { RecordedEvent } from '../../eventstore/port';
import type { Projection, ProjectionTx } from '../projection';

export const KEY_INDEX = 'keys';

/**
 * SHA-256 of an API key → the key's record; what the inference auth reads on every request.
 * A deleted key's record is gone, so it fails at once.
 *
 *   rm:keys:{gen}:hash:{sha256hex}  hash: keyId, workspaceId, name, scopes (comma list),
 *                                   expiresAt (ISO or ""), rateLimit (requests/min or "")
 */
export const keyIndexProjection: Projection = {
  name: KEY_INDEX,
  handles: new Set(['ApiKeyCreated', 'ApiKeyDeleted', 'RateLimitChanged']),
  apply(event: RecordedEvent, tx: ProjectionTx) {
    switch (event.type) {
      case 'ApiKeyCreated': {
        const d = event.data as ApiKeyCreated['data'];
        tx.multi.hset(tx.key('hash', d.keyHash), {
          keyId: d.keyId,
          workspaceId: d.workspaceId,
          name: d.name,
          scopes: d.scopes.join(','),
          expiresAt: d.expiresAt ?? '',
          rateLimit: '',
        });
        break;
      }
      case 'ApiKeyDeleted': {
        const d = event.data as ApiKeyDeleted['data'];
        tx.multi.del(tx.key('hash', d.keyHash));
        break;
      }
      case 'RateLimitChanged': {
        const d = event.data as RateLimitChanged['data'];
        // Only for a key that still exists: a late change must not resurrect a deleted key.
        tx.multi.eval(
          "if redis.call('EXISTS', KEYS[1]) == 1 then redis.call('HSET', KEYS[1], 'rateLimit', ARGV[1]) end",
          1,
          tx.key('hash', d.keyHash),
          d.requestsPerMinute === null ? '' : String(d.requestsPerMinute),
        );
        break;
      }
    }
  },
};
