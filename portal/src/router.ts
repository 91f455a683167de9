import { useEffect, useState } from 'preact/hooks';

/** A tiny history router: pages are plain paths (/keys, /billing …), served by the SPA fallback. */
const listeners = new Set<(path: string) => void>();

export function navigate(to: string, opts: { replace?: boolean } = {}): void {
  if (to === location.pathname + location.search) return;
  if (opts.replace) history.replaceState(null, '', to);
  else history.pushState(null, '', to);
  for (const fn of listeners) fn(location.pathname);
  window.scrollTo(0, 0);
}

export function usePath(): string {
  const [path, setPath] = useState(location.pathname);
  useEffect(() => {
    const onPop = () => setPath(location.pathname);
    listeners.add(setPath);
    window.addEventListener('popstate', onPop);
    return () => {
      listeners.delete(setPath);
      window.removeEventListener('popstate', onPop);
    };
  }, []);
  return path;
}

/** An <a> that navigates in-page (a normal link with modifier keys, or without JavaScript). */
export function linkHandler(e: MouseEvent): void {
  const a = e.currentTarget as HTMLAnchorElement;
  if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
  if (a.origin !== location.origin) return;
  e.preventDefault();
  navigate(a.pathname + a.search);
}
