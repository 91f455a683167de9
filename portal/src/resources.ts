import { enc, get } from './api';

/** A key name's length limits (the API's). */
export const KEY_NAME_MIN = 3;
export const KEY_NAME_MAX = 64;

/** A key as GET /v1/workspaces/:ws/keys lists it (docs/ACCOUNTS.md); the secret is never in it. */
export interface ApiKey {
  keyId: string;
  name: string;
  prefix: string;
  last4: string;
  scopes: string[];
  created: string;
  createdBy?: { userId: string; name: string | null };
  expiresAt: string | null;
  expired?: boolean;
  lastUsed?: string | null;
  /** USD decimal string, or null for no budget (PATCH …/keys/:keyId sets it). */
  monthlyBudget?: string | null;
  /** The UTC month (YYYY-MM) that monthToDateSpend counts. */
  spendMonth?: string;
  monthToDateSpend?: string;
  budgetRemaining?: string | null;
  /** The last roll: the prefix and last 4 above are the new secret's. */
  lastRoll?: { rolledAt: string; previousSecretValidUntil: string } | null;
}

export const listKeys = (ws: string, signal?: AbortSignal) =>
  get<{ keys: ApiKey[] }>(`/v1/workspaces/${enc(ws)}/keys`, { signal }).then((r) => r.keys);
