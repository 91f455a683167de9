/**
 * The OpenAPI document: it validates as OpenAPI 3.1, its references resolve, every route Express
 * serves is in it and everything in it is served, and /docs serves its page and files itself.
 */
import express from 'express';
import { openApiPath } from '../../../src/openapi/document';
import { openApiDocument } from '../../../src/openapi/router';
import { scrape } from '../../../src/platform/http/system/schemas';
import { expectMatchesContract } from '../../support/contract';
import { startTestServer, TestServer } from '../../support/harness';
import { validateOpenApi } from '../../support/openapi-validator';
import { appOf, servedRoutes } from '../../support/served-routes';

let server: TestServer;
let doc: Record<string, any>;
beforeAll(async () => {
  server = await startTestServer({ ADMIN_TOKEN: 'operator-token-0123456789', METRICS_PORT: '0', SWEEPER_ENABLED: 'false' });
  const res = await fetch(`${server.url}/openapi.json`);
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^application\/json/);
  doc = (await res.json()) as Record<string, any>;
});
afterAll(() => server?.close());

type Op = { method: string; path: string };
const key = (o: Op) => `${o.method.toUpperCase()} ${o.path}`;
const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options', 'trace'];
const documented = (onOwnServer: boolean): Op[] =>
  Object.entries(doc.paths as Record<string, Record<string, unknown>>)
    .filter(([, item]) => Boolean(item.servers) === onOwnServer)
    .flatMap(([path, item]) =>
      Object.keys(item)
        .filter((m) => METHODS.includes(m))
        .map((method) => ({ method, path })),
    );

describe('GET /openapi.json', () => {
  test('is a valid OpenAPI 3.1 document whose every $ref resolves, with the package version', async () => {
    expect(await validateOpenApi(doc)).toEqual({ valid: true, errors: null, unresolvedRefs: null });
    expect(doc.openapi).toBe('3.1.0');
    expect(doc.info.version).toBe((await import('../../../package.json')).version);
    expect(doc).toEqual(JSON.parse(JSON.stringify(openApiDocument())));
    await expectMatchesContract(await fetch(`${server.url}/openapi.json`), (await import('../../../src/openapi/schemas')).openApiJson);
  });

  test('declares the four ways of proving who one is, and errors are the shared {"detail"} bodies', () => {
    const schemes = doc.components.securitySchemes;
    expect(schemes.apiKey).toMatchObject({ type: 'http', scheme: 'bearer', bearerFormat: 'tgk…' });
    expect(schemes.sessionCookie).toMatchObject({ type: 'apiKey', in: 'cookie', name: 'tg_session' });
    expect(schemes.sessionCookie.description).toMatch(/X-Requested-With/);
    expect(schemes.operatorToken).toMatchObject({ type: 'http', scheme: 'bearer' });
    expect(schemes.stripeSignature).toMatchObject({ type: 'apiKey', in: 'header', name: 'Stripe-Signature' });
    const post = doc.paths['/external/api/inference'].post;
    expect(post.security).toEqual([{ apiKey: [] }]);
    expect(post.responses['402'].content['application/json'].schema).toEqual({ $ref: '#/components/schemas/Error' });
    expect(post.responses['422'].content['application/json'].schema).toEqual({ $ref: '#/components/schemas/ValidationError' });
    expect(doc.paths['/admin/projections'].get.security).toEqual([{ operatorToken: [] }]);
    expect(doc.paths['/webhooks/stripe'].post.security).toEqual([{ stripeSignature: [] }]);
    expect(doc.paths['/portal/workspaces/{ws}/requests/{requestId}'].get.security).toEqual([{ sessionCookie: [] }, { sessionToken: [] }]);
    expect(doc.paths['/healthz'].get.security).toEqual([]);
  });
});

describe('what a generated client needs', () => {
  const operations = () =>
    Object.entries(doc.paths as Record<string, Record<string, any>>).flatMap(([path, item]) =>
      Object.keys(item)
        .filter((m) => METHODS.includes(m))
        .map((method) => ({ path, method, op: item[method] })),
    );

  test('every operation declares its 4xx answers', () => {
    const without = operations()
      .filter(({ op }) => !Object.keys(op.responses).some((s) => /^4\d\d$/.test(s)))
      .map(({ method, path }) => `${method.toUpperCase()} ${path}`);
    expect(without).toEqual([]);
  });

  test('the headers routes require or return are declared: Idempotency-Key, x-ratelimit-*, Retry-After, WWW-Authenticate, Idempotent-Replayed, x-usage-*', () => {
    const headerParams = (path: string, method: string) =>
      ((doc.paths[path][method].parameters ?? []) as Array<{ in: string; name: string; required: boolean }>).filter(
        (p) => p.in === 'header',
      );
    expect(headerParams('/v1/workspaces/{ws}/billing/deposits', 'post')).toEqual([
      expect.objectContaining({ name: 'Idempotency-Key', required: true }),
    ]);
    for (const path of [
      '/external/api/inference',
      '/external/api/inference/streaming',
      '/external/api/inference/openai/v1/chat/completions',
    ]) {
      const op = doc.paths[path].post;
      expect(headerParams(path, 'post')).toEqual([expect.objectContaining({ name: 'Idempotency-Key', required: false })]);
      const ok = Object.keys(op.responses['200'].headers);
      expect(ok).toEqual(
        expect.arrayContaining([
          'x-request-id',
          'x-ratelimit-limit-requests',
          'x-ratelimit-remaining-requests',
          'x-ratelimit-reset-requests',
          'Idempotent-Replayed',
        ]),
      );
      if (!path.endsWith('streaming'))
        expect(ok).toEqual(expect.arrayContaining(['x-usage-input-tokens', 'x-usage-output-tokens', 'x-usage-cost-usd']));
      expect(Object.keys(op.responses['429'].headers)).toEqual(expect.arrayContaining(['Retry-After', 'x-ratelimit-reset-requests']));
      expect(Object.keys(op.responses['409'].headers)).toContain('Retry-After');
      expect(Object.keys(op.responses['401'].headers)).toContain('WWW-Authenticate');
    }
    expect(Object.keys(doc.paths['/admin/projections'].get.responses['401'].headers)).toContain('WWW-Authenticate');
  });

  test("every operation says what it does beyond its summary (a description, as Spectral's operation-description asks)", () => {
    const without = operations()
      .filter(({ op }) => !(typeof op.description === 'string' && op.description.trim().length > 0))
      .map(({ method, path }) => `${method.toUpperCase()} ${path}`);
    expect(without).toEqual([]);
  });

  test('every answer of the API port declares x-request-id; Location and Set-Cookie where they are sent', () => {
    const missing = operations()
      .filter(({ path }) => !doc.paths[path].servers)
      .flatMap(({ method, path, op }) =>
        Object.entries(op.responses as Record<string, { headers?: Record<string, unknown> }>)
          .filter(([, r]) => !r.headers?.['x-request-id'])
          .map(([status]) => `${method.toUpperCase()} ${path} ${status}`),
      );
    expect(missing).toEqual([]);
    expect(Object.keys(doc.paths['/v1/workspaces'].post.responses['201'].headers)).toContain('Location');
    expect(Object.keys(doc.paths['/v1/login'].post.responses['200'].headers)).toContain('Set-Cookie');
    expect(Object.keys(doc.paths['/v1/logout'].post.responses['204'].headers)).toContain('Set-Cookie');
    for (const path of ['/external/api/inference/openai/v1/models', '/external/api/inference/openai/v1/models/{model}']) {
      expect(Object.keys(doc.paths[path].get.responses['200'].headers)).toEqual(
        expect.arrayContaining(['x-ratelimit-limit-requests', 'x-ratelimit-reset-requests']),
      );
    }
  });

  test("a stream's schema is its frame, so a generated client sees the chunk type", () => {
    const media = doc.paths['/external/api/inference/streaming'].post.responses['200'].content['text/event-stream'];
    expect(media.schema.anyOf).toEqual(
      expect.arrayContaining([{ $ref: '#/components/schemas/InferenceChunk' }, { $ref: '#/components/schemas/InferenceUsage' }]),
    );
    const chat = doc.paths['/external/api/inference/openai/v1/chat/completions'].post.responses['200'].content['text/event-stream'];
    expect(chat.schema.anyOf).toEqual(expect.arrayContaining([{ $ref: '#/components/schemas/ChatCompletionChunk' }]));
  });
});

describe('coverage', () => {
  test('every route the app serves is documented with its method, and every documented route is served', () => {
    const served = servedRoutes(appOf(server.running.server!)).map((r) => ({ method: r.method, path: openApiPath(r.path) }));
    const servedKeys = new Set(served.map(key));
    const documentedKeys = new Set(documented(false).map(key));
    const undocumented = served.filter((r) => !documentedKeys.has(key(r))).map(key);
    const notServed = [...documentedKeys].filter((k) => !servedKeys.has(k));
    expect(undocumented).toEqual([]);
    expect(notServed).toEqual([]);
    // The walk itself sees what it must: the inference, admin, webhook and portal routes.
    expect(served.map(key)).toEqual(
      expect.arrayContaining([
        'POST /external/api/inference',
        'PUT /admin/workspaces/{ws}/keys/{keyId}/rate-limit',
        'POST /webhooks/stripe',
        'GET /portal/config.json',
      ]),
    );
  });

  test('the walk finds routes in nested routers under their mount path', () => {
    const app = express();
    const inner = express.Router();
    inner.post('/b/:id', (_req, res) => void res.end());
    const outer = express.Router();
    outer.use('/a', inner);
    app.use(outer);
    app.get('/c', (_req, res) => void res.end());
    expect(servedRoutes(app)).toEqual([
      { method: 'post', path: '/a/b/:id' },
      { method: 'get', path: '/c' },
    ]);
  });

  test('the routes documented on their own server are the METRICS_PORT listener’s, and it serves them', async () => {
    expect(documented(true).map(key)).toEqual(['GET /metrics']);
    expect(doc.paths['/metrics'].servers[0].url).toBe('http://{host}:{metricsPort}');
    const base = `http://127.0.0.1:${server.running.metricsPort}`;
    const text = (await expectMatchesContract(await fetch(`${base}/metrics`), scrape)) as string;
    expect(text).toMatch(/^# HELP /m);
    await expectMatchesContract(await fetch(`${base}/metrics`, { method: 'POST' }), scrape);
  });
});

describe('/docs', () => {
  test('GET /docs redirects to /docs/, which serves the page with the app’s security headers', async () => {
    const redirect = await fetch(`${server.url}/docs`, { redirect: 'manual' });
    expect(redirect.status).toBe(301);
    expect(redirect.headers.get('location')).toBe('/docs/');
    const page = await fetch(`${server.url}/docs/`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    expect(page.headers.get('x-content-type-options')).toBe('nosniff');
    expect(page.headers.get('content-security-policy')).toMatch(/script-src 'self'(;|$)/);
    const html = await page.text();
    expect(html).toContain('<div id="swagger-ui">');
    // Nothing from another origin: no CDN.
    expect(html).not.toMatch(/(src|href)=["']?(https?:)?\/\//);
  });

  test('every script and stylesheet the page loads is served from here with its type (nosniff holds)', async () => {
    const html = await (await fetch(`${server.url}/docs/`)).text();
    const assets = [...html.matchAll(/<(?:script[^>]*\ssrc|link[^>]*\shref)=["']?([^"'\s>]+)/g)].map(
      (m) => new URL(m[1], `${server.url}/docs/`),
    );
    expect(assets.map((u) => u.pathname)).toEqual(
      expect.arrayContaining([
        '/docs/swagger-ui.css',
        '/docs/swagger-ui-bundle.js',
        '/docs/swagger-ui-standalone-preset.js',
        '/docs/swagger-ui-init.js',
      ]),
    );
    for (const url of assets) {
      const res = await fetch(url);
      expect([url.pathname, res.status]).toEqual([url.pathname, 200]);
      const type = res.headers.get('content-type') ?? '';
      if (url.pathname.endsWith('.js')) expect(type).toMatch(/^(application|text)\/javascript/);
      if (url.pathname.endsWith('.css')) expect(type).toMatch(/^text\/css/);
      if (url.pathname.endsWith('.png')) expect(type).toMatch(/^image\/png/);
      expect(res.headers.get('x-content-type-options')).toBe('nosniff');
      const body = await res.text();
      if (url.pathname.endsWith('swagger-ui-init.js')) {
        expect(body).toContain('"url": "/openapi.json"');
        expect(body).toContain('"validatorUrl": null');
      }
    }
    expect((await fetch(`${server.url}/docs/package.json`)).status).toBe(404);
  });
});
