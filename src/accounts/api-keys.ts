import { conflict, DomainError, forbidden, invalid, notFound, paymentRequired } from '../platform/errors';
import type { Funding } from './funding';
import { formatUsd, NanoUsd } from '../platform/money';
import type { ApiKeyCreated, ApiKeyDeleted, ApiKeyRolled, RateLimitChanged } from './events';
import { cleanName, KEY_NAME_MAX, KEY_NAME_MIN, roleOfActor, type WorkspaceState } from './workspace-state';

/**
 * A workspace's API keys (stream `workspace-{wsId}`, folded by workspace.ts): create (only a funded
 * workspace), delete, roll the secret, and an operator's per-key rate. A key's name and budget: see
 * team.ts. Every refusal throws a DomainError and appends nothing.
 */

export type { Funding };

export type ApiKeyCommand =
  | {
      type: 'CreateApiKey';
      data: {
        keyId: string;
        name: string;
        keyHash: string;
        prefix: string;
        last4: string;
        scopes: string[];
        expiresAt: string | null;
        by: string;
        /** ISO time of the command: an expiry must lie after it. */
        now: string;
        funding: Funding;
        requiredDepositNanoUsd: NanoUsd;
      };
    }
  | { type: 'DeleteApiKey'; data: { keyId: string; by: string } }
  /** An operator's per-key request rate; null returns the key to the default. Not a member action. */
  | { type: 'ChangeRateLimit'; data: { keyId: string; requestsPerMinute: number | null; by: string } }
  | RollApiKey;

/** A new secret for a live key; the old one keeps working for the grace period (0 to 24 h). */
export type RollApiKey = {
  type: 'RollApiKey';
  data: { keyId: string; keyHash: string; prefix: string; last4: string; gracePeriodSeconds: number; now: string; by: string };
};
export const ROLL_GRACE_MAX_SECONDS = 86_400;

export type ApiKeyEvent = ApiKeyCreated | ApiKeyDeleted | RateLimitChanged | ApiKeyRolled;

export function fundingShortfall(f: Funding, required: NanoUsd): string | null {
  if (f.funded) return null;
  const missing: string[] = [];
  if (!f.hasPaymentMethod) missing.push('no payment method is on file');
  if (f.depositedNanoUsd < required) {
    missing.push(`deposits total ${formatUsd(f.depositedNanoUsd)} USD of the required ${formatUsd(required)} USD`);
  }
  return `This workspace is not funded yet: ${missing.join(' and ')}. Add a payment method and deposit at least ${formatUsd(required)} USD before creating API keys.`;
}

export function decideApiKey(command: ApiKeyCommand, state: WorkspaceState): ApiKeyEvent[] {
  switch (command.type) {
    case 'CreateApiKey': {
      const d = command.data;
      roleOfActor(state, d.by);
      const name = cleanName(d.name, 'A key name', KEY_NAME_MIN, KEY_NAME_MAX);
      if (d.expiresAt !== null && !(Date.parse(d.expiresAt) > Date.parse(d.now))) {
        throw new DomainError('unprocessable', 'expiresAt must lie in the future');
      }
      if (state.keys.has(d.keyId)) throw conflict('This key already exists');
      const shortfall = fundingShortfall(d.funding, d.requiredDepositNanoUsd);
      if (shortfall) throw paymentRequired(shortfall);
      return [
        {
          type: 'ApiKeyCreated',
          data: {
            workspaceId: state.workspaceId,
            keyId: d.keyId,
            name,
            keyHash: d.keyHash,
            prefix: d.prefix,
            last4: d.last4,
            scopes: [...new Set(d.scopes)],
            expiresAt: d.expiresAt,
            createdBy: d.by,
          },
        },
      ];
    }
    case 'DeleteApiKey': {
      const d = command.data;
      const key = keyHeldBy(state, d.keyId, d.by, 'delete');
      return [{ type: 'ApiKeyDeleted', data: { workspaceId: state.workspaceId, keyId: key.keyId, keyHash: key.keyHash, by: d.by } }];
    }
    case 'RollApiKey':
      return [rollApiKey(state, command.data)];
    case 'ChangeRateLimit': {
      const d = command.data;
      if (!state.exists) throw notFound('Workspace not found');
      const key = state.keys.get(d.keyId);
      if (!key) throw notFound('API key not found');
      if (d.requestsPerMinute !== null && (!Number.isInteger(d.requestsPerMinute) || d.requestsPerMinute < 1)) {
        throw invalid('requestsPerMinute must be a whole number of at least 1, or null for the default', 'requestsPerMinute');
      }
      return [
        {
          type: 'RateLimitChanged',
          data: {
            workspaceId: state.workspaceId,
            keyId: key.keyId,
            keyHash: key.keyHash,
            requestsPerMinute: d.requestsPerMinute,
            by: d.by,
          },
        },
      ];
    }
  }
}

/**
 * The key, when the actor may roll or delete it: its creator, or an admin. A member's budget caps the
 * keys they created; rolling someone else's key would hand them a secret outside their budget.
 */
function keyHeldBy(state: WorkspaceState, keyId: string, by: string, verb: 'roll' | 'delete') {
  const role = roleOfActor(state, by);
  const key = state.keys.get(keyId);
  if (!key) throw notFound('API key not found');
  if (role !== 'admin' && key.createdBy !== by) throw forbidden(`Only the key's creator or a workspace admin may ${verb} this key`);
  return key;
}

function rollApiKey(state: WorkspaceState, d: RollApiKey['data']): ApiKeyRolled {
  const key = keyHeldBy(state, d.keyId, d.by, 'roll');
  const grace = d.gracePeriodSeconds;
  if (!Number.isInteger(grace) || grace < 0 || grace > ROLL_GRACE_MAX_SECONDS) {
    throw new DomainError('unprocessable', `gracePeriodSeconds must be a whole number from 0 to ${ROLL_GRACE_MAX_SECONDS}`);
  }
  if (d.keyHash === key.keyHash) throw conflict('The new secret must differ from the current one');
  const now = Date.parse(d.now);
  if (key.expiresAt !== null && Date.parse(key.expiresAt) <= now)
    throw conflict('This key has expired: create a new key instead of rolling it');
  // The old secret never outlives the key's own expiry.
  const until = key.expiresAt === null ? now + grace * 1000 : Math.min(now + grace * 1000, Date.parse(key.expiresAt));
  return {
    type: 'ApiKeyRolled',
    data: {
      workspaceId: state.workspaceId,
      keyId: key.keyId,
      keyHash: d.keyHash,
      prefix: d.prefix,
      last4: d.last4,
      previousKeyHash: key.keyHash,
      gracePeriodSeconds: grace,
      previousKeyValidUntil: new Date(until).toISOString(),
      by: d.by,
    },
  };
}
