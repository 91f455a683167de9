import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import express from 'express';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { portalRouter } from '../../../src/portal/router';
import { contentSecurityPolicy, isReserved } from '../../../src/platform/project-root';
import type { Services } from '../../../src/services';
import { startTestServer, TestServer } from '../../support/harness';
import { ensurePortalBuilt } from './support/browser';
import { POLICY_VERSION } from '../../support/policy';

/** How the api role serves the portal: files, caching, the SPA fallback, CSP, and what it never shadows. */

let server: TestServer;

beforeAll(async () => {
  ensurePortalBuilt();
  server = await startTestServer();
});
afterAll(() => server?.close());

const get = (path: string, init?: RequestInit) => fetch(server.url + path, { redirect: 'manual', ...init });

describe('serving the portal', () => {
  test('/ and every page path answer index.html, never cached, with a strict CSP', async () => {
    for (const path of ['/', '/keys', '/billing', '/usage', '/workspace', '/login', '/signup', '/some/deep/link']) {
      const res = await get(path);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^text\/html/);
      expect(res.headers.get('cache-control')).toBe('no-cache');
      const csp = res.headers.get('content-security-policy')!;
      expect(csp).toContain("default-src 'self'");
      expect(csp).toContain("script-src 'self'");
      expect(csp).not.toContain('unsafe-inline');
      expect(csp).toContain("frame-ancestors 'none'");
      expect(res.headers.get('x-content-type-options')).toBe('nosniff');
      const html = await res.text();
      expect(html).toContain('<div id="app"></div>');
      // No inline script: the only scripts are files of our own origin.
      expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
    }
  });

  test('hashed assets are cached for a year; a missing asset is a JSON 404, not the app', async () => {
    const html = await (await get('/')).text();
    const js = /src="(\/assets\/[^"]+\.js)"/.exec(html)![1];
    const css = /href="(\/assets\/[^"]+\.css)"/.exec(html)![1];
    for (const path of [js, css]) {
      const res = await get(path);
      expect(res.status).toBe(200);
      expect(res.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    }
    expect((await get(js)).headers.get('content-type')).toMatch(/javascript/);
    const missing = await get('/assets/nope-123.js');
    expect(missing.status).toBe(404);
    expect(await missing.json()).toEqual({ detail: 'Not Found' });
    expect((await get('/nothing-here.png')).status).toBe(404);
    expect((await get('/favicon.svg')).status).toBe(200);
  });

  test('never shadows the APIs: their unknown paths stay JSON 404s', async () => {
    for (const path of ['/v1/nope', '/external/api/nope', '/webhooks/nope', '/admin/nope', '/portal/nope']) {
      const res = await get(path, { headers: { accept: 'text/html' } });
      expect(res.status).toBe(404);
      expect(res.headers.get('content-type')).toMatch(/json/);
      // The portal's headers are for pages: the APIs' answers pass through untouched.
      expect(res.headers.get('content-security-policy')).toBeNull();
    }
    const models = await get('/external/api/inference/openai/v1/models');
    expect(models.status).toBe(401);
    expect(models.headers.get('content-security-policy')).toBeNull();
    expect(await (await get('/healthz')).json()).toEqual({ status: 'ok' });
    expect(isReserved('/v1')).toBe(true);
    expect(isReserved('/v1x')).toBe(false);
    expect(isReserved('/external/api/inference')).toBe(true);
    expect(isReserved('/keys')).toBe(false);
    // Writes to page paths are not pages.
    expect((await get('/keys', { method: 'POST' })).status).toBe(404);
  });

  test('/portal/config.json tells the sandbox apart from Stripe, and lists the test cards', async () => {
    const res = await get('/portal/config.json');
    expect(res.headers.get('cache-control')).toBe('no-store');
    const cfg = (await res.json()) as {
      gateway: string;
      stripePublishableKey: string | null;
      testCards: unknown[];
      prices: unknown;
      modelBackend: string;
      webSearch: boolean;
      signedIn: boolean;
    };
    expect(cfg.gateway).toBe('sandbox');
    expect(cfg.modelBackend).toBe('demo'); // the playground labels the demo model as such
    expect(cfg.webSearch).toBe(false); // no SEARXNG_URL: the playground leaves "Web search" unticked
    expect(cfg.signedIn).toBe(false); // so a signed-out page never asks /v1/me (no 401 in the console)
    expect(cfg.stripePublishableKey).toBeNull();
    expect(cfg.testCards).toContainEqual({ paymentMethodId: 'pm_card_visa', brand: 'visa', last4: '4242', behaviour: 'succeeds' });
    expect(cfg.prices).toEqual({ inputUsdPerToken: '0.0000025', outputUsdPerToken: '0.00001' });
  });

  test('the CSP lets Stripe in only when Elements is configured', () => {
    expect(contentSecurityPolicy(false)).not.toContain('stripe');
    const csp = contentSecurityPolicy(true);
    expect(csp).toContain("script-src 'self' https://js.stripe.com");
    expect(csp).toContain('frame-src https://js.stripe.com https://hooks.stripe.com');
    expect(csp).toContain("connect-src 'self' https://api.stripe.com");
  });

  test('a request’s cost needs a session and membership of its workspace', async () => {
    expect((await get('/portal/workspaces/w1/requests/r1')).status).toBe(401);
    const email = `cost-${Date.now()}@example.com`;
    const json = { 'content-type': 'application/json' };
    await get('/v1/signup', {
      method: 'POST',
      headers: json,
      body: JSON.stringify({ email, password: 'password123', name: 'C', acceptedPolicyVersion: POLICY_VERSION }),
    });
    const login = (await (
      await get('/v1/login', { method: 'POST', headers: json, body: JSON.stringify({ email, password: 'password123' }) })
    ).json()) as {
      sessionToken: string;
    };
    const auth = { authorization: `Bearer ${login.sessionToken}` };
    const cfg = (await (await get('/portal/config.json', { headers: { cookie: `tg_session=${login.sessionToken}` } })).json()) as {
      signedIn: boolean;
    };
    expect(cfg.signedIn).toBe(true);
    expect((await get('/portal/workspaces/not-mine/requests/r1', { headers: auth })).status).toBe(404);
    const me = (await (await get('/v1/me', { headers: auth })).json()) as { workspaces: { workspaceId: string }[] };
    const ws = me.workspaces[0].workspaceId;
    const res = await get(`/portal/workspaces/${ws}/requests/${'x'.repeat(20)}`, { headers: auth });
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({ detail: 'Request not found' });
  }, 15_000);
});

describe('without a build', () => {
  let http: Server;
  let dir: string;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tollgate-no-portal-'));
    const app = express();
    app.use(portalRouter(server.services as Services, { distDir: join(dir, 'missing') }));
    http = await new Promise<Server>((resolve) => {
      const h = app.listen(0, '127.0.0.1', () => resolve(h));
    });
  });
  afterAll(async () => {
    await new Promise((resolve) => http.close(resolve));
    rmSync(dir, { recursive: true, force: true });
  });

  test('pages answer a 503 page saying to run npm run build', async () => {
    const res = await fetch(`http://127.0.0.1:${(http.address() as AddressInfo).port}/keys`);
    expect(res.status).toBe(503);
    expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    expect(await res.text()).toContain('npm run build');
  });
});
