/**
 * What other areas may use of accounts (src/<area>/ files import this, or ./events.ts, never a file
 * inside; test/platform/unit/layers.test.ts checks). Nothing here loads the HTTP side, so a use case
 * may import it: the route kit (access checks, shared contract fields) is ./routes/index.ts.
 */
export { budgetLeft, budgetRefusal, type BudgetRefusalFacts } from './budget';
export { touchKeyLastUsed } from './key-last-used';
export { KEY_PREFIX, keyShape, type KeyShape } from './key-secrets';
export { hashKey, KeyIndex, keyRecordOf, type KeyRecord } from './projections/key-index/queries';
export { keyIndexProjection } from './projections/key-index/projection';
/** The key index's Redis layout, for the inference admission script. */
export { KEY_FIELDS } from './projections/key-index/layout';
export { keysOf } from './projections/api-keys/queries';
export { auditKeys } from './projections/audit/queries';
export { membership, workspaceInfo } from './projections/memberships/queries';
export { profilesOf } from './projections/users/queries';
export { readSession, SESSION_COOKIE, sessionHash, sessionTokenOf } from './sessions/sessions';
/** The operator's rate-limit override (the admin API). */
export { eraseUser } from './usecases/erase-user';
export { setRateLimit } from './usecases/set-rate-limit';
/** Notices shown in GET /v1/me (the webhook sender tells admins an endpoint was disabled). */
export { clearNotice, postNotice, type Notice } from './notices';
