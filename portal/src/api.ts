/**
 * The portal's one HTTP client. It relies on the HttpOnly session cookie (never reads or stores a
 * token) and marks every write with X-Requested-With, which the accounts API requires of
 * cookie-authenticated writes (CSRF: a cross-site form cannot set that header).
 */

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly detail: unknown,
  ) {
    super(describeDetail(status, detail));
    this.name = 'ApiError';
  }
}

export function describeDetail(status: number, detail: unknown): string {
  if (typeof detail === 'string' && detail) return detail;
  if (Array.isArray(detail)) {
    return detail
      .map((d: { loc?: unknown[]; msg?: string }) => {
        const field = Array.isArray(d.loc) ? d.loc.filter((p) => p !== 'body' && p !== 'query').join('.') : '';
        return field ? `${field}: ${d.msg}` : String(d.msg ?? '');
      })
      .join('; ');
  }
  return `Request failed (HTTP ${status})`;
}

/** Listeners told when the session is gone (a 401 from /v1): the app shows the login page. */
const unauthorizedListeners = new Set<() => void>();
export function onUnauthorized(fn: () => void): () => void {
  unauthorizedListeners.add(fn);
  return () => unauthorizedListeners.delete(fn);
}

/**
 * Listeners told when a workspace route answered as if the user's membership changed under them
 * (removed: 404 "Workspace not found"; demoted: 403 "Forbidden"): the session re-reads /v1/me.
 */
const accessListeners = new Set<(status: number) => void>();
export function onWorkspaceAccessChanged(fn: (status: number) => void): () => void {
  accessListeners.add(fn);
  return () => accessListeners.delete(fn);
}
const lostAccess = (status: number, detail: unknown) =>
  (status === 404 && detail === 'Workspace not found') || (status === 403 && detail === 'Forbidden');

export interface RequestOptions {
  headers?: Record<string, string>;
  /** Don't announce a 401 as an expired session (the login form's own 401). */
  quiet401?: boolean;
  signal?: AbortSignal;
}

export async function api<T = unknown>(method: string, path: string, body?: unknown, opts: RequestOptions = {}): Promise<T> {
  const headers: Record<string, string> = { Accept: 'application/json', ...opts.headers };
  if (method !== 'GET' && method !== 'HEAD') headers['X-Requested-With'] = 'tollgate-portal';
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  let res: Response;
  try {
    res = await fetch(path, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      credentials: 'same-origin',
      cache: 'no-store',
      signal: opts.signal,
    });
  } catch (err) {
    if ((err as Error).name === 'AbortError') throw err;
    throw new ApiError(0, 'The service cannot be reached: check your connection and try again');
  }
  const text = await res.text();
  let data: unknown = undefined;
  if (text) {
    try {
      data = JSON.parse(text);
    } catch {
      data = text;
    }
  }
  if (!res.ok) {
    const detail = data && typeof data === 'object' && 'detail' in data ? (data as { detail: unknown }).detail : data;
    if (res.status === 401 && !opts.quiet401) for (const fn of unauthorizedListeners) fn();
    if (path.startsWith('/v1/workspaces/') && lostAccess(res.status, detail)) for (const fn of accessListeners) fn(res.status);
    throw new ApiError(res.status, detail);
  }
  return data as T;
}

export const get = <T>(path: string, opts?: RequestOptions) => api<T>('GET', path, undefined, opts);
export const post = <T>(path: string, body?: unknown, opts?: RequestOptions) => api<T>('POST', path, body ?? {}, opts);
export const put = <T>(path: string, body?: unknown, opts?: RequestOptions) => api<T>('PUT', path, body ?? {}, opts);
export const patch = <T>(path: string, body?: unknown, opts?: RequestOptions) => api<T>('PATCH', path, body ?? {}, opts);
export const del = <T>(path: string, opts?: RequestOptions) => api<T>('DELETE', path, undefined, opts);

export const enc = encodeURIComponent;

export function errorText(err: unknown): string {
  if (err instanceof ApiError && lostAccess(err.status, err.detail)) {
    return err.status === 404
      ? 'You are no longer a member of this workspace: an admin removed you, or you left it. Choose another workspace from the menu.'
      : 'Only admins of this workspace can do this. If you were an admin, your role has just changed.';
  }
  if (err instanceof ApiError) return err.message;
  if (err instanceof Error) return err.message;
  return String(err);
}
