import { useEffect, useRef, useState } from 'preact/hooks';
import { post } from './api';
import { Link, Loading, Message } from './components/ui';
import { AuditPage } from './pages/audit';
import { BillingPage } from './pages/billing/page';
import { KeysPage } from './pages/keys';
import { LoginPage, SignupPage } from './pages/login';
import { PlaygroundPage } from './pages/playground/page';
import { ReceiptPage, RECEIPT_PATH } from './pages/receipt';
import { UsagePage } from './pages/usage/page';
import { WEBHOOKS_PATH, WebhooksPage } from './pages/webhooks/page';
import { WorkspacePage } from './pages/workspace/page';
import { navigate, usePath } from './router';
import { forgetAllSecrets, useSession } from './state';
import { PolicyPrompt, USAGE_POLICY_PATH, UsagePolicyPage } from './policy';

interface PortalPage {
  path: string;
  label: string;
  title: string;
  render: () => preact.ComponentChildren;
  /** Shown in the navigation to admins only (the page itself explains when a member opens it). */
  adminOnly?: boolean;
}

const PAGES: PortalPage[] = [
  { path: '/', label: 'Playground', title: 'Playground', render: () => <PlaygroundPage /> },
  { path: '/keys', label: 'API keys', title: 'API keys', render: () => <KeysPage /> },
  { path: '/workspace', label: 'Workspace', title: 'Workspace', render: () => <WorkspacePage /> },
  { path: '/billing', label: 'Billing', title: 'Billing', render: () => <BillingPage /> },
  { path: '/usage', label: 'Usage', title: 'Usage', render: () => <UsagePage /> },
  { path: '/audit', label: 'Audit log', title: 'Audit log', render: () => <AuditPage />, adminOnly: true },
];
/** Pages outside the navigation. */
const OTHER_PAGES = [
  { path: USAGE_POLICY_PATH, label: 'Usage policy', title: 'Usage policy', render: () => <UsagePolicyPage /> },
  { path: RECEIPT_PATH, label: 'Receipt', title: 'Request receipt', render: () => <ReceiptPage /> },
  // Linked from the workspace page (admins): the header has no room for another link on a laptop.
  { path: WEBHOOKS_PATH, label: 'Webhooks', title: 'Webhooks', render: () => <WebhooksPage /> },
];

const visiblePages = (role: string | undefined) => PAGES.filter((p) => !p.adminOnly || role === 'admin');

export function App() {
  const path = usePath();
  const { me, loading } = useSession();

  if (loading) return <Loading what="Loading the portal" />;

  if (!me) {
    const page = path === '/signup' ? <SignupPage /> : path === USAGE_POLICY_PATH ? <UsagePolicyPage /> : <LoginPage />;
    return (
      <div class="auth-layout">
        <ShowLoginAddress path={path} />
        <SkipLink />
        <main id="main" class="auth-main" tabIndex={-1}>
          <p class="brand brand-large" aria-hidden="true">
            tollgate
          </p>
          {page}
        </main>
      </div>
    );
  }
  const shown = path === '/login' || path === '/signup' ? '/' : path;
  const page = [...PAGES, ...OTHER_PAGES].find((p) => p.path === shown) ?? null;
  return (
    <>
      <LeaveAuthPages />
      <Shell path={shown}>{page ? page.render() : <NotFound />}</Shell>
    </>
  );
}

/** Signed out on a page: the address becomes /login?next=<page>, and the login returns there. */
function ShowLoginAddress({ path }: { path: string }) {
  useEffect(() => {
    if (path === '/signup' || path === '/login' || path === USAGE_POLICY_PATH) return;
    history.replaceState(null, '', `/login${path === '/' ? '' : `?next=${encodeURIComponent(path)}`}`);
  }, [path]);
  return null;
}

/** Signed in on /login or /signup (a bookmark, the back button): show the playground's address. */
function LeaveAuthPages() {
  useEffect(() => {
    if (location.pathname === '/login' || location.pathname === '/signup') navigate('/', { replace: true });
  });
  return null;
}

function SkipLink() {
  return (
    <a class="skip-link" href="#main">
      Skip to content
    </a>
  );
}

function Shell({ path, children }: { path: string; children: preact.ComponentChildren }) {
  const { me, workspace, selectWorkspace, setMe, flash, setFlash } = useSession();
  const mainRef = useRef<HTMLElement>(null);
  const [loggingOut, setLoggingOut] = useState(false);
  const [menuOpen, setMenuOpen] = useState(false);
  const title = [...PAGES, ...OTHER_PAGES].find((p) => p.path === path)?.title ?? 'Not found';

  useEffect(() => {
    document.title = `${title} — tollgate`;
  }, [title]);
  const firstPath = useRef(path);
  useEffect(() => {
    if (path !== firstPath.current) {
      setFlash(null);
      // Screen readers start reading the new page, not the old link.
      mainRef.current?.focus({ preventScroll: true });
    }
    firstPath.current = path;
    setMenuOpen(false);
    // eslint-disable-next-line react-hooks/exhaustive-deps -- on a new path only; setFlash is a new function each render
  }, [path]);
  useEffect(() => {
    if (!menuOpen) return;
    const onKey = (e: KeyboardEvent) => e.key === 'Escape' && setMenuOpen(false);
    document.addEventListener('keydown', onKey);
    return () => document.removeEventListener('keydown', onKey);
  }, [menuOpen]);

  if (!me) return null;
  const logout = async () => {
    setLoggingOut(true);
    try {
      await post('/v1/logout');
    } catch {
      /* the session is gone either way */
    }
    forgetAllSecrets();
    setMe(null);
    setLoggingOut(false);
    navigate('/login', { replace: true });
  };

  return (
    <div class="layout">
      <SkipLink />
      <header class="topbar">
        <Link href="/" class="brand">
          tollgate
        </Link>
        {/* On narrow screens the navigation, switcher and log-out fold into this menu. */}
        <button
          type="button"
          class="button menu-button"
          aria-expanded={menuOpen}
          aria-controls="topbar-menu"
          onClick={() => setMenuOpen((o) => !o)}
        >
          <MenuIcon open={menuOpen} />
          Menu
        </button>
        <div id="topbar-menu" class={`topbar-menu${menuOpen ? ' open' : ''}`}>
          <nav aria-label="Portal">
            <ul class="nav">
              {visiblePages(workspace?.role).map((p) => (
                <li key={p.path}>
                  <Link href={p.path} aria-current={p.path === path ? 'page' : undefined} onNavigate={() => setMenuOpen(false)}>
                    {p.label}
                  </Link>
                </li>
              ))}
            </ul>
          </nav>
          <div class="topbar-right">
            {me.workspaces.length > 0 && (
              <div class="ws-switch">
                <label for="ws-switch">Workspace</label>
                <select
                  id="ws-switch"
                  value={workspace?.workspaceId}
                  onChange={(e) => {
                    selectWorkspace((e.target as HTMLSelectElement).value);
                    setMenuOpen(false);
                  }}
                >
                  {me.workspaces.map((w) => (
                    <option key={w.workspaceId} value={w.workspaceId}>
                      {w.name}
                      {w.role === 'admin' ? ' (admin)' : ''}
                    </option>
                  ))}
                </select>
              </div>
            )}
            <span class="user" title={me.user.email}>
              {me.user.name || me.user.email}
            </span>
            <button type="button" class="button button-quiet" onClick={logout} disabled={loggingOut}>
              Log out
            </button>
          </div>
        </div>
      </header>
      <main id="main" ref={mainRef} tabIndex={-1} class="main">
        {flash && <Message kind="info">{flash}</Message>}
        {workspace ? (
          <div key={workspace.workspaceId}>{children}</div>
        ) : (
          <p>You have no workspace yet. Log out and log in again to create your personal workspace.</p>
        )}
      </main>
      <PolicyPrompt />
      <footer class="footer">
        <p>
          tollgate developer portal · <Link href={USAGE_POLICY_PATH}>Usage policy</Link>
        </p>
      </footer>
    </div>
  );
}

function MenuIcon({ open }: { open: boolean }) {
  return (
    <svg
      aria-hidden="true"
      focusable="false"
      width="18"
      height="18"
      viewBox="0 0 24 24"
      fill="none"
      stroke="currentColor"
      stroke-width="2"
      stroke-linecap="round"
    >
      {open ? <path d="M6 6l12 12M18 6L6 18" /> : <path d="M4 7h16M4 12h16M4 17h16" />}
    </svg>
  );
}

function NotFound() {
  return (
    <section>
      <h1>Page not found</h1>
      <p>
        <Link href="/">Go to the playground</Link>
      </p>
    </section>
  );
}
