import { enc, get } from './api';
import type { KeyList } from './api-types';

/** A key name's length limits (the API's). */
export const KEY_NAME_MIN = 3;
export const KEY_NAME_MAX = 64;

/** A key as GET /v1/workspaces/:ws/keys lists it; the secret is never in it. */
export type { ApiKey } from './api-types';

export const listKeys = (ws: string, signal?: AbortSignal) =>
  get<KeyList>(`/v1/workspaces/${enc(ws)}/keys`, { signal }).then((r) => r.keys);
