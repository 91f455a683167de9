import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

/**
 * Where the built portal lives: `<project root>/dist/portal` (vite build, `npm run build`).
 * The project root is found by walking up from this file to the package.json named tollgate, so
 * the same code works compiled (dist/src/api/portal) and from source (src/portal, tests).
 */
export function projectRoot(from: string = __dirname): string {
  let dir = from;
  for (;;) {
    const pkg = join(dir, 'package.json');
    if (existsSync(pkg)) {
      try {
        if ((JSON.parse(readFileSync(pkg, 'utf8')) as { name?: string }).name === 'tollgate') return dir;
      } catch {
        /* keep walking */
      }
    }
    const up = dirname(dir);
    if (up === dir) return process.cwd();
    dir = up;
  }
}

export const portalDistDir = (root: string = projectRoot()) => join(root, 'dist', 'portal');

/** Paths the portal never answers, even for GET: they belong to the APIs. */
export const RESERVED_PREFIXES = [
  '/v1',
  '/external',
  '/webhooks',
  '/admin',
  '/healthz',
  '/readyz',
  '/metrics',
  '/portal',
  '/openapi.json',
  '/.well-known',
  '/docs',
];

export function isReserved(path: string): boolean {
  return RESERVED_PREFIXES.some((p) => path === p || path.startsWith(`${p}/`));
}

/**
 * The portal's Content-Security-Policy: everything from our own origin; Stripe's script, frames and
 * API only when Stripe Elements is configured. No inline script or style anywhere.
 */
export function contentSecurityPolicy(stripe: boolean): string {
  const stripeJs = stripe ? ' https://js.stripe.com' : '';
  return [
    "default-src 'self'",
    `script-src 'self'${stripeJs}`,
    "style-src 'self'",
    "img-src 'self' data:",
    "font-src 'self'",
    `connect-src 'self'${stripe ? ' https://api.stripe.com' : ''}`,
    `frame-src ${stripe ? 'https://js.stripe.com https://hooks.stripe.com' : "'none'"}`,
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
  ].join('; ');
}

export const NOT_BUILT_PAGE = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>tollgate portal not built</title></head>
<body><main><h1>The developer portal has not been built</h1>
<p>Run <code>npm run build</code> (or <code>npm install</code>, which runs it) and restart the service.
The APIs under <code>/v1</code> and <code>/external/api</code> work without it.</p></main></body></html>
`;
