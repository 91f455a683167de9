import type { WorkspaceEvent } from '../../events';
import { assertNever } from '../../../platform/event';
import { projection } from '../../../platform/projections/projection';
import { luaScript } from '../../../platform/redis-scripts';
import { KEY_FIELDS as F, KEY_INDEX, keyIndexParts as at } from './layout';

export { KEY_INDEX };

/**
 * SHA-256 of an API key → the key's record; what the inference auth reads on every request.
 * A deleted key's record is gone, so it fails at once. The Redis layout: ./layout.ts.
 *
 * A rolled key's previous secret keeps a copy of the record whose expiresAt is the end of the
 * grace period: the auth checks it against the clock on every request, so it ends at the same
 * instant in every api process. The copy itself expires a day later (PEXPIREAT), so a client still
 * sending the old secret is told why it fails for a while, and nothing lingers. A change by key
 * id (delete, rate limit) reaches every hash in the key's set.
 */
export const keyIndexProjection = projection<WorkspaceEvent>()({
  name: KEY_INDEX,
  handles: ['ApiKeyCreated', 'ApiKeyDeleted', 'RateLimitChanged', 'ApiKeyRenamed', 'ApiKeyRolled'],
  apply(event, tx) {
    switch (event.type) {
      case 'ApiKeyCreated': {
        const d = event.data;
        tx.multi.hset(tx.key(...at.record(d.keyHash)), {
          [F.keyId]: d.keyId,
          [F.workspaceId]: d.workspaceId,
          [F.name]: d.name,
          [F.scopes]: d.scopes.join(','),
          [F.expiresAt]: d.expiresAt ?? '',
          [F.rateLimit]: '',
        });
        break;
      }
      case 'ApiKeyDeleted': {
        const d = event.data;
        tx.multi.del(tx.key(...at.record(d.keyHash)));
        void DELETE_ROLLED.eval(tx.multi, { secrets: tx.key(...at.secrets(d.keyId)) }, { recordPrefix: tx.key(...at.record('')) });
        break;
      }
      case 'RateLimitChanged': {
        const d = event.data;
        const value = d.requestsPerMinute === null ? '' : String(d.requestsPerMinute);
        // Only for a key that still exists: a late change must not resurrect a deleted key.
        void SET_IF_EXISTS.eval(tx.multi, { record: tx.key(...at.record(d.keyHash)) }, { value, field: F.rateLimit });
        void SET_ON_ROLLED.eval(
          tx.multi,
          { secrets: tx.key(...at.secrets(d.keyId)) },
          { recordPrefix: tx.key(...at.record('')), field: F.rateLimit, value },
        );
        break;
      }
      case 'ApiKeyRolled': {
        const d = event.data;
        const atOnce = d.gracePeriodSeconds === 0;
        void ROLL.eval(
          tx.multi,
          {
            previousRecord: tx.key(...at.record(d.previousKeyHash)),
            newRecord: tx.key(...at.record(d.keyHash)),
            secrets: tx.key(...at.secrets(d.keyId)),
          },
          {
            previousHash: d.previousKeyHash,
            newHash: d.keyHash,
            validUntil: d.previousKeyValidUntil,
            keptUntilMs: String(Date.parse(d.previousKeyValidUntil) + ROLLED_RECORD_KEPT_MS),
            atOnce: atOnce ? '1' : '0',
            fieldRolledAway: F.rolledAway,
            fieldExpiresAt: F.expiresAt,
          },
        );
        break;
      }
      case 'ApiKeyRenamed': {
        const d = event.data;
        void SET_IF_EXISTS.eval(tx.multi, { record: tx.key(...at.record(d.keyHash)) }, { value: d.name, field: F.name });
        void SET_ON_ROLLED.eval(
          tx.multi,
          { secrets: tx.key(...at.secrets(d.keyId)) },
          { recordPrefix: tx.key(...at.record('')), field: F.name, value: d.name },
        );
        break;
      }
      default:
        assertNever(event);
    }
  },
});

const ROLLED_RECORD_KEPT_MS = 24 * 3600 * 1000;

// Keys outside KEYS (recordPrefix + a hash) are as they were before the scripts moved to files.
export const ROLL = luaScript('accounts/projections/key-index/roll.lua', {
  keys: ['previousRecord', 'newRecord', 'secrets'],
  /** validUntil: the end of the grace (ISO); keptUntilMs: the copy's expiry; atOnce: '1' without grace. */
  args: ['previousHash', 'newHash', 'validUntil', 'keptUntilMs', 'atOnce', 'fieldRolledAway', 'fieldExpiresAt'],
});
export const DELETE_ROLLED = luaScript('accounts/projections/key-index/delete-rolled.lua', { keys: ['secrets'], args: ['recordPrefix'] });
export const SET_ON_ROLLED = luaScript('accounts/projections/key-index/set-on-rolled.lua', {
  keys: ['secrets'],
  args: ['recordPrefix', 'field', 'value'],
});
export const SET_IF_EXISTS = luaScript('accounts/projections/key-index/set-if-exists.lua', { keys: ['record'], args: ['value', 'field'] });
