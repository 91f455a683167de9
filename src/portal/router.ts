import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import express, { Router } from 'express';
import { MODEL_CONFIGS, readReceipt } from '../inference';
import { TEST_CARDS } from '../billing';
import { readSession, sessionTokenOf } from '../accounts';
import { requireMember, requireSession, userOf, workspaceOf } from '../accounts/routes';
import { formatUsd } from '../platform/money';
import type { Services } from '../services';
import { mount } from '../platform/http/mount';
import { HttpError } from '../platform/http/middleware/errors';
import { PerKeyCap } from '../platform/http/middleware/limits';
import { portalConfig, requestCost } from './schemas';
import { contentSecurityPolicy, isReserved, NOT_BUILT_PAGE, portalDistDir } from '../platform/project-root';

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * The developer portal (docs/PORTAL.md):
 *
 *   GET /portal/config.json                               what the browser needs to know (gateway, Stripe key, prices)
 *   GET /portal/workspaces/:ws/requests/:requestId        one inference request's tokens and cost (playground)
 *   GET /assets/*                                         the built, content-hashed files: cached for a year
 *   GET any other non-API path                            index.html (the single-page app), never cached
 *
 * It never answers under /v1, /external, /webhooks, /admin, /healthz or /readyz, and it is the last
 * module, so every API route wins over it. Without a build it answers pages with a 503 saying so.
 */
export function portalRouter(s: Services, opts: { distDir?: string } = {}): Router {
  const dist = opts.distDir ?? portalDistDir();
  const stripe = Boolean(s.config.STRIPE_PUBLISHABLE_KEY);
  const csp = contentSecurityPolicy(stripe);
  const r = Router();

  const security: express.RequestHandler = (_req, res, next) => {
    res.setHeader('Content-Security-Policy', csp);
    res.setHeader('X-Content-Type-Options', 'nosniff');
    res.setHeader('Referrer-Policy', 'same-origin');
    res.setHeader('X-Frame-Options', 'DENY');
    res.setHeader('Cross-Origin-Opener-Policy', 'same-origin');
    next();
  };

  const gateway = s.config.STRIPE_SECRET_KEY ? 'stripe' : 'sandbox';
  // Test payment methods are offered where they work: the sandbox, or Stripe in test mode without
  // Elements. A live Stripe account only ever gets Elements.
  const testCards =
    gateway === 'sandbox' || (s.config.STRIPE_SECRET_KEY?.startsWith('sk_test_') && !s.config.STRIPE_PUBLISHABLE_KEY)
      ? Object.entries(TEST_CARDS).map(([paymentMethodId, c]) => ({
          paymentMethodId,
          brand: c.brand,
          last4: c.last4,
          behaviour: c.behaviour,
        }))
      : [];

  mount(r, portalConfig, security, async (req, res) => {
    res.setHeader('Cache-Control', 'no-store');
    // The portal asks GET /v1/me only when a session is there: a signed-out page logs no 401.
    const session = sessionTokenOf(req);
    const signedIn = Boolean(session?.token && (await readSession(s, session.token)));
    res.json({
      signedIn,
      gateway,
      stripePublishableKey: s.config.STRIPE_PUBLISHABLE_KEY ?? null,
      testCards,
      initialDepositUsd: s.config.INITIAL_DEPOSIT_USD,
      minDepositUsd: s.config.MIN_DEPOSIT_USD,
      prices: {
        inputUsdPerToken: formatUsd(s.config.PRICE_INPUT_NANO_USD_PER_TOKEN),
        outputUsdPerToken: formatUsd(s.config.PRICE_OUTPUT_NANO_USD_PER_TOKEN),
      },
      rateLimitPerMinute: s.config.RATE_LIMIT_PER_MINUTE,
      models: MODEL_CONFIGS,
      // The playground labels the built-in demo model as a demo (no real model answers).
      modelBackend: s.config.MODEL_BACKEND,
      webSearch: Boolean(s.search),
    });
  });

  // The playground's "this call cost": the request's TokensDebited, read from its own stream. The
  // inference endpoints answer text only (the wire format is fixed), so the portal asks afterwards.
  // Waits up to 3 s for the debit (a stream's debit is appended right after its last chunk).
  // An unknown id answers at once (its InferenceRequested is written before any text is served);
  // only a known, unbilled request waits, and a user holds at most a few such waits at a time.
  const waits = new PerKeyCap(4, 'request lookups');
  mount(r, requestCost, security, requireSession(s), requireMember(s), async (_req, res, { params: { requestId } }) => {
    if (!REQUEST_ID.test(requestId)) throw new HttpError(404, 'Request not found');
    const ws = workspaceOf(res).workspaceId;
    const release = waits.acquire(userOf(res).userId);
    try {
      await answerRequestCost(s, res, ws, requestId);
    } finally {
      release();
    }
  });

  r.use(
    '/assets',
    security,
    express.static(join(dist, 'assets'), {
      index: false,
      immutable: true,
      maxAge: '365d',
    }),
    (_req: express.Request, res: express.Response) => {
      res.setHeader('Cache-Control', 'no-store');
      res.status(404).json({ detail: 'Not Found' });
    },
  );

  let indexHtml: string | null = null;
  const readIndex = () => {
    if (indexHtml !== null) return indexHtml;
    const file = join(dist, 'index.html');
    if (!existsSync(file)) return null;
    indexHtml = readFileSync(file, 'utf8');
    return indexHtml;
  };

  // Other built files at the top level (favicon.svg, robots.txt): short cache, never index.html.
  const topLevelFiles = express.static(dist, {
    index: false,
    maxAge: '1h',
    redirect: false,
    setHeaders: (res, file) => {
      if (file.endsWith('.html')) res.setHeader('Cache-Control', 'no-cache');
    },
  });
  // Only page reads reach the files (and get the portal's headers); API paths pass straight through.
  const isPageRead = (req: express.Request) => (req.method === 'GET' || req.method === 'HEAD') && !isReserved(req.path);
  r.use((req, res, next) => (isPageRead(req) ? security(req, res, () => topLevelFiles(req, res, next)) : next()));

  r.use((req, res, next) => {
    if (!isPageRead(req)) return next();
    // A missing file (/foo.js) is a 404, not the app: only extension-less paths are pages.
    if (/\.[A-Za-z0-9]+$/.test(req.path)) return next();
    res.setHeader('Cache-Control', 'no-cache');
    res.type('html');
    const html = readIndex();
    if (html === null) {
      res.status(503).send(NOT_BUILT_PAGE);
      return;
    }
    res.send(html);
  });

  return r;
}

/** Answers with the request's billing from its receipt (src/inference/usecases/receipts.ts), waiting up to 3 s for the debit when the request is known but not yet billed. */
async function answerRequestCost(s: Services, res: express.Response, ws: string, requestId: string): Promise<void> {
  const deadline = Date.now() + 3000;
  for (;;) {
    const r = await readReceipt(s, requestId, { workspaceId: ws });
    if (!r) throw new HttpError(404, 'Request not found');
    if (r.status === 'completed' && r.prices) {
      res.setHeader('Cache-Control', 'no-store');
      res.json({
        requestId: r.requestId,
        config: r.config,
        keyId: r.key.keyId,
        inputTokens: r.inputTokens,
        outputTokens: r.outputTokens,
        cost: r.cost,
        inputPriceUsdPerToken: r.prices.inputUsdPerToken,
        outputPriceUsdPerToken: r.prices.outputUsdPerToken,
      });
      return;
    }
    if (Date.now() >= deadline) throw new HttpError(404, 'Request not billed yet');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
