import { enc, get } from './api';

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
}

export const listKeys = (ws: string, signal?: AbortSignal) =>
  get<{ keys: ApiKey[] }>(`/v1/workspaces/${enc(ws)}/keys`, { signal }).then((r) => r.keys);
