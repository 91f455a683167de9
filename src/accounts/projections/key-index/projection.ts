import type { WorkspaceEvent } from '../../events';
import { assertNever } from '../../../platform/event';
import { projection } from '../../../platform/projections/projection';
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
        tx.multi.eval(DELETE_ROLLED, 1, tx.key(...at.secrets(d.keyId)), tx.key(...at.record('')));
        break;
      }
      case 'RateLimitChanged': {
        const d = event.data;
        // Only for a key that still exists: a late change must not resurrect a deleted key.
        tx.multi.eval(
          "if redis.call('EXISTS', KEYS[1]) == 1 then redis.call('HSET', KEYS[1], ARGV[2], ARGV[1]) end",
          1,
          tx.key(...at.record(d.keyHash)),
          d.requestsPerMinute === null ? '' : String(d.requestsPerMinute),
          F.rateLimit,
        );
        tx.multi.eval(SET_ON_ROLLED, 1, tx.key(...at.secrets(d.keyId)), tx.key(...at.record('')), F.rateLimit, d.requestsPerMinute === null ? '' : String(d.requestsPerMinute));
        break;
      }
      case 'ApiKeyRolled': {
        const d = event.data;
        const atOnce = d.gracePeriodSeconds === 0;
        tx.multi.eval(
          ROLL,
          3,
          tx.key(...at.record(d.previousKeyHash)),
          tx.key(...at.record(d.keyHash)),
          tx.key(...at.secrets(d.keyId)),
          d.previousKeyHash,
          d.keyHash,
          d.previousKeyValidUntil,
          String(Date.parse(d.previousKeyValidUntil) + ROLLED_RECORD_KEPT_MS),
          atOnce ? '1' : '0',
          F.rolledAway,
          F.expiresAt,
        );
        break;
      }
      case 'ApiKeyRenamed': {
        const d = event.data;
        tx.multi.eval(
          "if redis.call('EXISTS', KEYS[1]) == 1 then redis.call('HSET', KEYS[1], ARGV[2], ARGV[1]) end",
          1,
          tx.key(...at.record(d.keyHash)),
          d.name,
          F.name,
        );
        tx.multi.eval(SET_ON_ROLLED, 1, tx.key(...at.secrets(d.keyId)), tx.key(...at.record('')), F.name, d.name);
        break;
      }
      default:
        assertNever(event);
    }
  },
});

const ROLLED_RECORD_KEPT_MS = 24 * 3600 * 1000;

// The new secret gets a copy of the current record; the previous one is dropped (no grace) or
// expires at the end of the grace period. Nothing happens for a key that is already gone.
// ARGV: 1 previous hash, 2 new hash, 3 end of the grace (ISO), 4 the copy's expiry (ms), 5 '1' without
// grace, 6 and 7 the rolledAway and expiresAt field names.
const ROLL = `
local rec = redis.call('HGETALL', KEYS[1])
if #rec == 0 then return 0 end
redis.call('HSET', KEYS[2], unpack(rec))
redis.call('HDEL', KEYS[2], ARGV[6])
redis.call('SADD', KEYS[3], ARGV[2])
if ARGV[5] == '1' then
  redis.call('DEL', KEYS[1])
  redis.call('SREM', KEYS[3], ARGV[1])
else
  redis.call('HSET', KEYS[1], ARGV[7], ARGV[3], ARGV[6], '1')
  redis.call('PEXPIREAT', KEYS[1], ARGV[4])
  redis.call('SADD', KEYS[3], ARGV[1])
end
return 1`;

const DELETE_ROLLED = `
for _, h in ipairs(redis.call('SMEMBERS', KEYS[1])) do redis.call('DEL', ARGV[1] .. h) end
redis.call('DEL', KEYS[1])
return 1`;

// A field set on every live hash of a rolled key (only those that still exist).
const SET_ON_ROLLED = `
for _, h in ipairs(redis.call('SMEMBERS', KEYS[1])) do
  local k = ARGV[1] .. h
  if redis.call('EXISTS', k) == 1 then redis.call('HSET', k, ARGV[2], ARGV[3]) end
end
return 1`;
