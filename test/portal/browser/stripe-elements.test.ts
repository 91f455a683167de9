import type { Browser, Page } from 'playwright-core';
import type { TestServer } from '../../support/harness';
import { capture, ensurePortalBuilt, launchChromium, startPortalServer, watchProblems } from './support/browser';

/**
 * With STRIPE_PUBLISHABLE_KEY set, the billing page takes the card through Stripe Elements instead
 * of offering test cards. Stripe.js cannot be fetched here, so the browser is handed a stand-in at
 * https://js.stripe.com/v3/ with the same surface (Stripe(pk).elements().create('card'),
 * createPaymentMethod): what is tested is the portal's side — the script comes from Stripe's origin
 * under the CSP, only a pm_… id reaches the service, and the card is saved.
 */

const FAKE_STRIPE_JS = `
window.Stripe = function (publishableKey) {
  window.__stripeKey = publishableKey;
  var input;
  return {
    elements: function () {
      return {
        create: function (type) {
          return {
            mount: function (node) {
              input = document.createElement('input');
              input.setAttribute('aria-label', 'Card number');
              input.setAttribute('autocomplete', 'cc-number');
              node.appendChild(input);
            },
            destroy: function () { if (input) input.remove(); },
            on: function (event, fn) { if (input) input.addEventListener('input', function () { fn({}); }); },
          };
        },
      };
    },
    createPaymentMethod: function (opts) {
      var number = input ? input.value.replace(/\\s+/g, '') : '';
      if (number !== '5555555555554444') return Promise.resolve({ error: { message: 'Your card number is invalid.' } });
      return Promise.resolve({ paymentMethod: { id: 'pm_card_mastercard' } });
    },
  };
};`;

let server: TestServer;
let browser: Browser;
let page: Page;
const problems: string[] = [];

beforeAll(async () => {
  ensurePortalBuilt();
  server = await startPortalServer({ STRIPE_PUBLISHABLE_KEY: 'pk_test_portal_elements' });
  browser = await launchChromium();
  const ctx = await browser.newContext({ baseURL: server.url, viewport: { width: 1280, height: 900 } });
  await ctx.route('https://js.stripe.com/v3/', (route) =>
    route.fulfill({ status: 200, contentType: 'application/javascript', body: FAKE_STRIPE_JS }),
  );
  page = await ctx.newPage();
  watchProblems(page, 'stripe', problems);
});

afterAll(async () => {
  await browser?.close();
  await server?.close();
});

test('Stripe Elements replaces the test cards when a publishable key is configured', async () => {
  const res = await fetch(`${server.url}/billing`);
  expect(res.headers.get('content-security-policy')).toContain("script-src 'self' https://js.stripe.com");

  await page.goto('/signup');
  await page.getByLabel('Name').fill('Stripe User');
  await page.getByLabel('E-mail').fill(`stripe-${Date.now()}@example.com`);
  await page.getByLabel('Password').fill('password1234');
  await page.getByLabel(/I accept the usage policy/).check();
  await page.getByRole('button', { name: 'Sign up' }).click();
  await page.getByRole('heading', { level: 1, name: 'Billing' }).waitFor();

  const card = page.getByLabel('Card number');
  await card.waitFor();
  expect(await page.evaluate(() => (globalThis as unknown as { __stripeKey: string }).__stripeKey)).toBe('pk_test_portal_elements');
  expect(await page.getByText('Test cards — no real card is charged').count()).toBe(0);

  await card.fill('4000 0000 0000 0000');
  await page.getByRole('button', { name: 'Save card' }).click();
  await page.getByText('Your card number is invalid.').waitFor();

  await card.fill('5555 5555 5555 4444');
  await page.getByRole('button', { name: 'Save card' }).click();
  await page.getByText('Payment method saved.').waitFor();
  expect(await page.getByTestId('payment-method').innerText()).toMatch(/Mastercard ending in 4444/);
  await capture(page, 'stripe-01-elements', problems);
  expect(problems).toEqual([]);
});
