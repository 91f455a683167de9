import type { WorkspaceEvent } from '../../events';
import { assertNever } from '../../../platform/event';
import { projection } from '../../../platform/projections/projection';
import { DEFAULT_BUDGET_PERIOD } from '../../../platform/budget-periods';
import { budgetOf } from '../../budgets';

export const API_KEYS = 'api-keys';

/**
 * A workspace's keys for its key list (the secret is never anywhere; the hash stays out of the list).
 * The inference hot path reads the key index (../key-index), not this. A rename or a budget is kept
 * beside the creation record, so no apply has to read and rewrite JSON.
 *
 *   rm:api-keys:{gen}:ws:{wsId}         hash: keyId → JSON {keyId, name, prefix, last4, scopes, expiresAt, createdBy, created}
 *   rm:api-keys:{gen}:ws:{wsId}:name    hash: keyId → current name (after an ApiKeyRenamed)
 *   rm:api-keys:{gen}:ws:{wsId}:budget  hash: keyId → budget, nano-USD (absent: none)
 *   rm:api-keys:{gen}:ws:{wsId}:budget-period  hash: keyId → daily | weekly (absent: monthly)
 *   rm:api-keys:{gen}:rolled:{wsId}     hash: keyId → JSON KeyRoll (the last roll: the prefix and last 4 now shown)
 */
export const apiKeysProjection = projection<WorkspaceEvent>()({
  name: API_KEYS,
  handles: ['ApiKeyCreated', 'ApiKeyDeleted', 'ApiKeyRenamed', 'ApiKeyBudgetChanged', 'ApiKeyBudgetChangedV2', 'ApiKeyRolled'],
  apply(event, tx) {
    switch (event.type) {
      case 'ApiKeyCreated': {
        const d = event.data;
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
        break;
      }
      case 'ApiKeyDeleted': {
        const d = event.data;
        tx.multi
          .hdel(tx.key('ws', d.workspaceId), d.keyId)
          .hdel(tx.key('ws', d.workspaceId, 'name'), d.keyId)
          .hdel(tx.key('ws', d.workspaceId, 'budget'), d.keyId)
          .hdel(tx.key('ws', d.workspaceId, 'budget-period'), d.keyId)
          .hdel(tx.key('rolled', d.workspaceId), d.keyId);
        break;
      }
      case 'ApiKeyRenamed': {
        const d = event.data;
        tx.multi.hset(tx.key('ws', d.workspaceId, 'name'), d.keyId, d.name);
        break;
      }
      case 'ApiKeyBudgetChanged':
      case 'ApiKeyBudgetChangedV2': {
        const d = event.data;
        const budget = budgetOf(event);
        if (budget === null) tx.multi.hdel(tx.key('ws', d.workspaceId, 'budget'), d.keyId);
        else tx.multi.hset(tx.key('ws', d.workspaceId, 'budget'), d.keyId, budget.nanoUsd);
        if (budget === null || budget.period === DEFAULT_BUDGET_PERIOD)
          tx.multi.hdel(tx.key('ws', d.workspaceId, 'budget-period'), d.keyId);
        else tx.multi.hset(tx.key('ws', d.workspaceId, 'budget-period'), d.keyId, budget.period);
        break;
      }
      case 'ApiKeyRolled': {
        const d = event.data;
        const roll: KeyRoll = {
          prefix: d.prefix,
          last4: d.last4,
          rolledAt: event.created,
          previousSecretValidUntil: d.previousKeyValidUntil,
        };
        tx.multi.hset(tx.key('rolled', d.workspaceId), d.keyId, JSON.stringify(roll));
        break;
      }
      default:
        assertNever(event);
    }
  },
});

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

/** A key's last roll: its secret's new prefix and last 4, and until when the previous secret worked. */
export interface KeyRoll {
  prefix: string;
  last4: string;
  rolledAt: string;
  previousSecretValidUntil: string;
}
