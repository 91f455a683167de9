import { createContext, type ComponentChildren } from 'preact';
import { useCallback, useContext, useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { get, onUnauthorized, onWorkspaceAccessChanged } from './api';
import type { Me, PortalConfig, Workspace } from './model';

/**
 * Key secrets created in this page session, by key id: in memory only (never localStorage,
 * sessionStorage or a cookie), so the playground can use a key right after it was created. A
 * reload forgets them; the user then pastes the secret.
 */
const secrets = new Map<string, string>();
export const rememberSecret = (keyId: string, secret: string) => secrets.set(keyId, secret);
export const secretFor = (keyId: string) => secrets.get(keyId);
export const forgetSecret = (keyId: string) => secrets.delete(keyId);
export const forgetAllSecrets = () => secrets.clear();

/** The chosen workspace id is not a secret: it is kept across reloads. */
const WS_STORAGE = 'tollgate.workspace';

export interface Session {
  me: Me | null;
  /** true until the first /v1/me answered (or failed). */
  loading: boolean;
  config: PortalConfig | null;
  workspace: Workspace | null;
  selectWorkspace(id: string): void;
  refresh(): Promise<Me | null>;
  setMe(me: Me | null): void;
  /** A success message shown above the page until the next navigation (survives a workspace switch). */
  flash: string | null;
  setFlash(message: string | null): void;
}

const Ctx = createContext<Session | null>(null);

export function useSession(): Session {
  const s = useContext(Ctx);
  if (!s) throw new Error('useSession outside SessionProvider');
  return s;
}

/** The current workspace: present whenever a page under the signed-in shell renders. */
export function useWorkspace(): Workspace {
  const w = useSession().workspace;
  if (!w) throw new Error('no workspace selected');
  return w;
}

export function SessionProvider({ children }: { children: ComponentChildren }) {
  const [me, setMe] = useState<Me | null>(null);
  const [loading, setLoading] = useState(true);
  const [config, setConfig] = useState<PortalConfig | null>(null);
  const [flash, setFlash] = useState<string | null>(null);
  const [wsId, setWsId] = useState<string | null>(() => {
    try {
      return localStorage.getItem(WS_STORAGE);
    } catch {
      return null;
    }
  });

  const refresh = useCallback(async () => {
    try {
      const m = await get<Me>('/v1/me', { quiet401: true });
      setMe(m);
      return m;
    } catch {
      setMe(null);
      return null;
    } finally {
      setLoading(false);
    }
  }, []);

  useEffect(() => {
    // Signed out, GET /v1/me would answer 401, which the browser logs in the console on every
    // page: the config says first whether a session is there.
    get<PortalConfig>('/portal/config.json').then(
      (c) => {
        setConfig(c);
        if (c.signedIn === false) {
          setMe(null);
          setLoading(false);
        } else void refresh();
      },
      () => void refresh(),
    );
    return onUnauthorized(() => {
      forgetAllSecrets();
      setMe(null);
    });
  }, [refresh]);

  const workspace = useMemo(() => {
    if (!me || !me.workspaces.length) return null;
    return me.workspaces.find((w) => w.workspaceId === wsId) ?? me.workspaces.find((w) => w.personal) ?? me.workspaces[0];
  }, [me, wsId]);

  // Removed from (or demoted in) the open workspace: re-read /v1/me, and say where the user is now.
  const current = useRef<Workspace | null>(null);
  current.current = workspace;
  useEffect(
    () =>
      onWorkspaceAccessChanged(async () => {
        const was = current.current;
        const now = await refresh();
        if (was && now && !now.workspaces.some((w) => w.workspaceId === was.workspaceId)) {
          setFlash(`You are no longer a member of ${was.name}.`);
        }
      }),
    [refresh],
  );

  const selectWorkspace = useCallback((id: string) => {
    setWsId(id);
    try {
      localStorage.setItem(WS_STORAGE, id);
    } catch {
      /* private mode: fine */
    }
  }, []);

  const value: Session = { me, loading, config, workspace, selectWorkspace, refresh, setMe, flash, setFlash };
  return <Ctx.Provider value={value}>{children}</Ctx.Provider>;
}
