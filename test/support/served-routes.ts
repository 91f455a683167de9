import type { Server } from 'node:http';

/** One route Express serves: a method and its Express path (`/v1/workspaces/:ws`). */
export interface ServedRoute {
  method: string;
  path: string;
}

interface Layer {
  rawPath?: string | string[];
  route?: { path: string | string[]; methods: Record<string, boolean> };
  handle?: { stack?: Layer[] };
}

/**
 * Every route of a built Express 5 app, read from its router stack: route layers give a method and
 * path; a nested router (a layer whose handle has a stack) is walked with its mount path as a
 * prefix. Middleware (`use`: static files, the portal's page fallback, gates) serves no route.
 */
export function servedRoutes(app: unknown): ServedRoute[] {
  const root = (app as { router?: { stack: Layer[] } }).router;
  if (!root) throw new Error('not an Express 5 app (no app.router)');
  const out: ServedRoute[] = [];
  const walk = (stack: Layer[], prefix: string) => {
    for (const layer of stack) {
      if (layer.route) {
        const paths = Array.isArray(layer.route.path) ? layer.route.path : [layer.route.path];
        for (const p of paths) {
          for (const [method, on] of Object.entries(layer.route.methods)) {
            if (on && method !== '_all') out.push({ method, path: prefix + p });
          }
        }
      } else if (layer.handle?.stack) {
        const mount = typeof layer.rawPath === 'string' && layer.rawPath !== '/' ? layer.rawPath : '';
        walk(layer.handle.stack, prefix + mount);
      }
    }
  };
  walk(root.stack, '');
  return out;
}

/** The Express app behind a started server (its 'request' listener). */
export function appOf(server: Server): unknown {
  // The Express app is the listener with a router (the harness's answer recorder comes first).
  const listener = server.listeners('request').find((l) => (l as { router?: unknown }).router);
  if (!listener) throw new Error('the server has no Express app among its request listeners');
  return listener;
}
