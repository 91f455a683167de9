import type { Browser, BrowserContext, Page } from 'playwright-core';
import type { TestServer } from '../../support/harness';
import { infer } from './support/api';
import { capture, ensurePortalBuilt, launchChromium, startPortalServer, waitForValue, watchProblems } from './support/browser';
import { POLICY_VERSION } from '../../support/policy';

// Page globals for page.evaluate callbacks (the project's tsconfig has no DOM lib).
declare const localStorage: Record<string, string>;
declare const sessionStorage: Record<string, string>;

/**
 * The parts of the portal the walk does not pass through: deleting a key after a confirmation
 * (and Escape cancelling it), a key refused for an unfunded workspace, a pasted secret in the
 * playground after a reload, a declined card, and the auto-reload form with its suspended notice.
 * The workspace is set up through the API; everything checked is done in the page.
 */

const run = Date.now().toString(36);
const user = { name: 'Grace Hopper', email: `grace-${run}@example.com`, password: 'cobol is forever' };

let server: TestServer;
let browser: Browser;
let ctx: BrowserContext;
let page: Page;
let token = '';
let ws = '';
const problems: string[] = [];

async function api<T = any>(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<T> {
  const res = await fetch(server.url + path, {
    method,
    headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}), ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text}`);
  return (text ? JSON.parse(text) : undefined) as T;
}

async function nav(label: string, heading: string | RegExp) {
  await page.getByRole('navigation', { name: 'Portal' }).getByRole('link', { name: label, exact: true }).click();
  await page.getByRole('heading', { level: 1, name: heading }).waitFor();
}

beforeAll(async () => {
  ensurePortalBuilt();
  server = await startPortalServer();
  await api('POST', '/v1/signup', { ...user, acceptedPolicyVersion: POLICY_VERSION });
  token = (await api<{ sessionToken: string }>('POST', '/v1/login', { email: user.email, password: user.password })).sessionToken;
  ws = (await api<{ workspaces: { workspaceId: string }[] }>('GET', '/v1/me')).workspaces[0].workspaceId;
  await api('POST', `/v1/workspaces/${ws}/billing/payment-method`, { paymentMethodId: 'pm_card_visa' });
  await api('POST', `/v1/workspaces/${ws}/billing/deposits`, { amount: '100' }, { 'idempotency-key': `first-${run}` });

  browser = await launchChromium();
  ctx = await browser.newContext({ baseURL: server.url, viewport: { width: 1280, height: 900 } });
  page = await ctx.newPage();
  watchProblems(page, 'grace', problems);
  // Log in through the form, arriving at a deep link.
  await page.goto('/keys');
  await page.getByRole('heading', { name: 'Log in' }).waitFor();
  expect(new URL(page.url()).pathname + new URL(page.url()).search).toBe('/login?next=%2Fkeys');
  await page.getByLabel('E-mail').fill(user.email);
  await page.getByLabel('Password').fill('wrong password');
  await page.getByRole('button', { name: 'Log in' }).click();
  await page.getByRole('alert').getByText('Invalid e-mail or password').waitFor();
  await page.getByLabel('Password').fill(user.password);
  await page.getByRole('button', { name: 'Log in' }).click();
  await page.getByRole('heading', { level: 1, name: 'API keys' }).waitFor();
});

afterAll(async () => {
  await browser?.close();
  await server?.close();
});

describe('portal details (headless Chromium)', () => {
  test('a key is deleted only after a confirmation; Escape cancels', async () => {
    await page.getByLabel('Key name').fill('doomed key');
    await page.getByRole('button', { name: 'Create API key' }).click();
    await page.getByLabel('Secret of the key doomed key').waitFor();
    await page.getByRole('button', { name: 'Done, hide the secret' }).click();
    await page.getByLabel('Secret of the key doomed key').waitFor({ state: 'detached' });

    const row = page.getByRole('row', { name: /doomed key/ });
    await row.getByRole('button', { name: 'Delete the key doomed key' }).click();
    const dialog = page.getByRole('dialog', { name: 'Delete this key?' });
    await dialog.waitFor();
    // The safe choice has the focus; Escape closes the dialog and nothing is deleted.
    await expect(
      dialog.getByRole('button', { name: 'Cancel' }).evaluate((b) => b === (b as any).ownerDocument.activeElement),
    ).resolves.toBe(true);
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'hidden' });
    await row.waitFor();

    await row.getByRole('button', { name: 'Delete the key doomed key' }).click();
    await dialog.waitFor();
    await capture(page, 'details-01-delete-key-dialog', problems);
    // From the keyboard: Tab to the delete button, Enter.
    await page.keyboard.press('Tab');
    await page.keyboard.press('Enter');
    await page.getByText('The key “doomed key” was deleted.', { exact: false }).waitFor();
    await row.waitFor({ state: 'detached' });
    // Focus continues from the outcome, not from the page body.
    await page.waitForFunction(() => {
      const doc = (globalThis as any).document;
      const active = doc.activeElement;
      return active && active !== doc.body && active.textContent.includes('was deleted');
    });
    const keys = await api<{ keys: unknown[] }>('GET', `/v1/workspaces/${ws}/keys`);
    expect(keys.keys).toHaveLength(0);
  });

  test('an unfunded workspace is told why it cannot have a key, with the way to Billing', async () => {
    await nav('Workspace', /Workspace: /);
    await page.getByLabel('Name of the new workspace').fill('Unfunded team');
    await page.getByRole('button', { name: 'Create workspace' }).click();
    await page.getByRole('heading', { level: 1, name: 'Workspace: Unfunded team' }).waitFor();
    await nav('API keys', 'API keys');
    await page.getByLabel('Key name').fill('too early');
    await page.getByRole('button', { name: 'Create API key' }).click();
    await page.getByText(/not funded yet/).waitFor();
    await page.getByRole('link', { name: 'Go to Billing' }).waitFor();
    await capture(page, 'details-02-key-unfunded', problems);
    // Back to the funded personal workspace.
    await page.getByLabel('Workspace', { exact: true }).selectOption({ label: 'Personal (admin)' });
    await page.getByRole('heading', { level: 1, name: 'API keys' }).waitFor();
  });

  test('after a reload the playground needs the secret pasted; a wrong one is flagged', async () => {
    const created = await api<{ secret: string }>('POST', `/v1/workspaces/${ws}/keys`, { name: 'pasted key' });
    await page.goto('/');
    await page.getByRole('heading', { level: 1, name: 'Playground' }).waitFor();
    await page.getByLabel('API key').locator('option', { hasText: 'pasted key' }).waitFor({ state: 'attached' });
    await waitForValue(page.getByLabel('Key secret'), '');
    await page.getByLabel('Key secret').fill('tgknotthesecretofthiskey');
    await page.getByText('This secret does not belong to the chosen key.').waitFor();
    await page.getByLabel('Key secret').fill(created.secret);
    await page.getByText('This secret does not belong to the chosen key.').waitFor({ state: 'detached' });
    await page.getByLabel('Stream the reply').uncheck();
    await page.getByLabel('Your message').fill('Hi there');
    await page.getByRole('button', { name: 'Run' }).click();
    await page.getByTestId('call-usage').getByText('Cost').waitFor();
    expect((await page.getByTestId('reply').innerText()).length).toBeGreaterThan(0);
    const stored = await page.evaluate(() => JSON.stringify({ ...localStorage }) + JSON.stringify({ ...sessionStorage }));
    expect(stored).not.toContain(created.secret);
  });

  test('a declined card is reported; auto-reload is set, then suspended with a notice', async () => {
    await nav('Billing', 'Billing');
    await page.getByLabel(/Visa •••• 0002/).check();
    await page.getByRole('button', { name: 'Replace payment method' }).click();
    // Saved, but not reported as a success: this card declines every charge.
    await page.getByText(/Card saved, but it will not pay/).waitFor();
    expect(await page.locator('.message-success').count()).toBe(0);
    await page.getByLabel('Deposit amount (USD)').fill('20');
    await page.getByRole('button', { name: 'Deposit $20.00' }).click();
    await page
      .getByRole('alert')
      .getByText(/The deposit failed/)
      .waitFor();

    // A card that needs 3-D Secure cannot be charged with nobody present: auto-reload suspends.
    await page.getByLabel(/Visa •••• 3184/).check();
    await page.getByRole('button', { name: 'Replace payment method' }).click();
    await page.getByText(/Card saved\. It needs 3-D Secure authentication/).waitFor();
    await page.getByLabel('Reload automatically').check();
    await page.getByLabel('When the balance falls below (USD)').fill('50');
    await page.getByLabel('Add this amount (USD)').fill('10');
    await page.getByLabel('Monthly cap (USD, optional)').fill('100');
    // One reload must lift the balance above the threshold: the page says so before sending.
    await page.getByRole('button', { name: 'Save auto-reload' }).click();
    await page
      .getByText('The threshold can be at most the reload amount ($10.00), so that one reload lifts the balance above it.')
      .waitFor();
    await page.getByLabel('Add this amount (USD)').fill('100');
    await page.getByLabel('Monthly cap (USD, optional)').fill('50');
    await page.getByRole('button', { name: 'Save auto-reload' }).click();
    await page.getByText('The monthly cap must be at least the reload amount ($100.00).').waitFor();
    await page.getByLabel('Monthly cap (USD, optional)').fill('500');
    await page.getByRole('button', { name: 'Save auto-reload' }).click();
    await page.getByText('Auto-reload saved.').waitFor();
    expect(await page.getByTestId('auto-reload-status').innerText()).toMatch(/Status: on/);

    // The balance (just under 100 USD after the playground call) is now below the threshold, and
    // one more request keeps it there.
    // A threshold above the balance would charge at once: the page asks first.
    await page.getByLabel('When the balance falls below (USD)').fill('99.9999');
    await page.getByRole('button', { name: 'Save auto-reload' }).click();
    const confirm = page.getByRole('dialog', { name: 'Charge the card now?' });
    await confirm.getByText(/already below the new threshold of \$99\.9999/).waitFor();
    await confirm.getByRole('button', { name: 'Save and charge $100.00' }).click();
    await page.getByText('Auto-reload saved.').waitFor();
    const key = await api<{ secret: string }>('POST', `/v1/workspaces/${ws}/keys`, { name: 'reload trigger' });
    expect(await infer(server.url, key.secret, 'spend a little', 8)).toBe(200);

    const deadline = Date.now() + 15_000;
    for (;;) {
      const b = await api<{ autoReload: { status: string } }>('GET', `/v1/workspaces/${ws}/billing`);
      if (b.autoReload.status === 'suspended') break;
      if (Date.now() > deadline) throw new Error(`auto-reload did not suspend: ${JSON.stringify(b.autoReload)}`);
      await new Promise((r) => setTimeout(r, 200));
    }
    await page.reload();
    await page.getByRole('heading', { level: 1, name: 'Billing' }).waitFor();
    await page
      .getByTestId('notice')
      .getByText(/Auto-reload is suspended/)
      .waitFor();
    await page.getByText(/Update the payment method, then save this form/).waitFor();
    expect(await page.getByTestId('auto-reload-status').innerText()).toMatch(/Status: suspended/);
    await page.getByTestId('ledger-row').first().waitFor();
    await capture(page, 'details-03-billing-suspended', problems);
    expect(problems).toEqual([]);
  });
});
