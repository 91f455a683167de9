import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { RequestHandler, Router } from 'express';
import swaggerUi from 'swagger-ui-express';
import { mount } from '../platform/http/mount';
import { projectRoot } from '../platform/project-root';
import { API_ROUTES, METRICS_PORT_ROUTES } from './areas';
import { buildOpenApiDocument, OpenApiDocument } from './document';
import { docsPage, openApiJson } from './schemas';

/** The OpenAPI document of every route contract, with the Prometheus listener as a server of its own. */
export function openApiDocument(): OpenApiDocument {
  const pkg = JSON.parse(readFileSync(join(projectRoot(), 'package.json'), 'utf8')) as { version: string };
  return buildOpenApiDocument({
    version: pkg.version,
    routes: API_ROUTES,
    elsewhere: [
      {
        routes: METRICS_PORT_ROUTES,
        server: {
          url: 'http://{host}:{metricsPort}',
          description: 'The Prometheus listener (METRICS_PORT on HOST; absent unless METRICS_PORT is set)',
          variables: { host: { default: '127.0.0.1' }, metricsPort: { default: '9464' } },
        },
      },
    ],
  });
}

/**
 * The reference page's own headers: scripts and styles from this origin only (Swagger UI's page
 * has inline <style> blocks and its components set style attributes, hence 'unsafe-inline' for
 * styles alone), no frames, no other origin reached.
 */
const DOCS_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

const docsHeaders: RequestHandler = (_req, res, next) => {
  res.setHeader('Content-Security-Policy', DOCS_CSP);
  res.setHeader('X-Frame-Options', 'DENY');
  res.setHeader('Referrer-Policy', 'same-origin');
  next();
};

/** GET /openapi.json, and the reference page at /docs/ with Swagger UI's files served from node_modules (no CDN). */
export function openApiRouter(): Router {
  // Built on the first request, not at start-up: 25–65 ms that every process (and every test
  // server) would otherwise pay before it listens, for a document most of them never serve.
  let doc: OpenApiDocument | undefined;
  const r = Router();
  mount(r, openApiJson, (_req, res) => {
    res.json((doc ??= openApiDocument()));
  });
  const ui = {
    customSiteTitle: 'tollgate API reference',
    // No validator badge: it would send the document's URL to validator.swagger.io.
    swaggerOptions: { url: openApiJson.path, validatorUrl: null },
    swaggerUrl: openApiJson.path,
  };
  const page = swaggerUi.setup(undefined, ui);
  mount(r, docsPage, docsHeaders, (req, res, _input, next) => {
    // The page loads ./swagger-ui.css and the like: it must be read as /docs/.
    if (!req.originalUrl.split('?')[0].endsWith('/')) return res.redirect(301, `${docsPage.path}/`);
    res.setHeader('Cache-Control', 'no-cache');
    page(req, res, next);
  });
  r.use(docsPage.path, docsHeaders, ...swaggerUi.serveFiles(undefined, ui));
  return r;
}
