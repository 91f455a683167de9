import type { Browser, BrowserContext, Locator, Page } from 'playwright-core';
import type { TestServer } from '../../support/harness';
import { fund, signUpAndLogIn, type ApiClient } from './support/api';
import { capture, ensurePortalBuilt, launchChromium, startPortalServer, waitForValue, watchProblems } from './support/browser';
import { horizontalOverflow, PHONE } from './support/phone';

declare const document: any;

/**
 * What the walk through the portal found in the playground and on the billing page, each checked
 * in the page with real clicks (taps on the phone), at desktop size and at phone size.
 */

jest.setTimeout(150_000);

const SIZES = [
  { label: 'desktop', viewport: { width: 1280, height: 800 }, phone: false },
  { label: 'phone', viewport: PHONE, phone: true },
];

let server: TestServer;
let browser: Browser;

beforeAll(async () => {
  ensurePortalBuilt();
  server = await startPortalServer();
  browser = await launchChromium();
});

afterAll(async () => {
  await browser?.close();
  await server?.close();
});

describe.each(SIZES)('walk findings at $label size', ({ label, viewport, phone }) => {
  const run = `${label}-${Date.now().toString(36)}`;
  const user = { name: 'Wanda Walker', email: `wanda-${run}@example.com`, password: 'walking the portal' };
  let ctx: BrowserContext;
  let page: Page;
  let api: ApiClient & { workspaceId: string };
  let keyA: { keyId: string; secret: string };
  let keyB: { keyId: string; secret: string };
  const problems: string[] = [];

  const press = (l: Locator) => (phone ? l.tap() : l.click());
  async function nav(link: string, heading: string | RegExp) {
    if (phone) await page.getByRole('button', { name: 'Menu' }).tap();
    await press(page.getByRole('navigation', { name: 'Portal' }).getByRole('link', { name: link, exact: true }));
    await page.getByRole('heading', { level: 1, name: heading }).waitFor();
  }
  const ledger = () =>
    api.call<{ entries: { type: string; keyId?: string }[] }>('GET', `/v1/workspaces/${api.workspaceId}/billing/ledger?limit=500`);
  const billing = () =>
    api.call<{ balance: string; autoReload: { enabled: boolean } | null }>('GET', `/v1/workspaces/${api.workspaceId}/billing`);

  beforeAll(async () => {
    api = await signUpAndLogIn(server.url, user);
    await fund(api, api.workspaceId);
    keyA = await api.call('POST', `/v1/workspaces/${api.workspaceId}/keys`, { name: 'key A' });
    keyB = await api.call('POST', `/v1/workspaces/${api.workspaceId}/keys`, { name: 'key B' });
    await api.call('POST', '/v1/workspaces', {
      name: 'A workspace with a very long name that would stretch the header switcher across the page',
    });
    ctx = await browser.newContext({ baseURL: server.url, viewport, ...(phone ? { isMobile: true, hasTouch: true } : {}) });
    page = await ctx.newPage();
    watchProblems(page, `${label}`, problems);
    await page.goto('/');
    await page.getByLabel('E-mail').fill(user.email);
    await page.getByLabel('Password').fill(user.password);
    await press(page.getByRole('button', { name: 'Log in' }));
    await page.getByRole('heading', { level: 1, name: 'Playground' }).waitFor();
  });

  afterAll(() => ctx?.close());

  test('the header is one row: the navigation folds into a menu on the phone only', async () => {
    expect(await page.getByRole('button', { name: 'Menu' }).isVisible()).toBe(phone);
    expect(await page.getByRole('navigation', { name: 'Portal' }).isVisible()).toBe(!phone);
    const header = (await page.locator('header').boundingBox())!;
    expect(header.height).toBeLessThanOrEqual(phone ? 72 : 80);
    // A long workspace name does not stretch the switcher (on the phone it fills the open menu).
    if (!phone) expect((await page.getByLabel('Workspace', { exact: true }).boundingBox())!.width).toBeLessThanOrEqual(260);
  });

  test('playground: the demo model is labelled; on a phone the message box comes before the settings', async () => {
    await page.getByText(/Demo model: this service runs tollgate’s built-in sample model/).waitFor();
    const options = await page.getByLabel('Model (config)').locator('option').allInnerTexts();
    expect(options.every((o) => /^service_3_\w+ \(demo\) — /.test(o))).toBe(true);
    const message = (await page.getByLabel('Your message').boundingBox())!;
    const model = (await page.getByLabel('Model (config)').boundingBox())!;
    if (phone) expect(message.y).toBeLessThan(model.y);
    // Either way the message box is on the first screen.
    expect(message.y + message.height).toBeLessThan(viewport.height);
  });

  test('playground: a pasted secret selects its own key, and that key is billed', async () => {
    await page.getByLabel('API key').selectOption(keyA.keyId);
    await page.getByLabel('Key secret').fill(keyB.secret);
    await waitForValue(page.getByLabel('API key'), keyB.keyId);
    await page.getByText('This secret belongs to the key “key B”').waitFor();
    await page.getByLabel('Stream the reply').setChecked(false);
    await page.getByLabel('Your message').fill('Which key pays for this?');
    await press(page.getByRole('button', { name: 'Run' }));
    await page.getByTestId('call-usage').getByText('Cost').waitFor();
    const debits = (await ledger()).entries.filter((e) => e.type === 'TokensDebited');
    expect(debits.map((d) => d.keyId)).toEqual([keyB.keyId]);
  });

  test('playground: a secret of no key of this workspace blocks Run', async () => {
    const before = (await ledger()).entries.length;
    await page.getByLabel('Key secret').fill('tgkthisisnotasecretofanykeyinthisworkspace00000');
    await page.getByText('This secret does not belong to the chosen key.').waitFor();
    expect(await page.getByRole('button', { name: 'Run' }).isDisabled()).toBe(true);
    await page.getByLabel('Your message').fill('Should not be sent');
    await page.getByLabel('Your message').press('Control+Enter');
    await page.getByText('The secret does not belong to the chosen key').waitFor();
    expect((await ledger()).entries.length).toBe(before);
    await page.getByLabel('Key secret').fill(keyA.secret);
    await waitForValue(page.getByLabel('API key'), keyA.keyId);
    expect(await page.getByRole('button', { name: 'Run' }).isDisabled()).toBe(false);
  });

  test('playground: each reply is shown once, the newest in the Reply box and older ones in the conversation', async () => {
    await page.getByLabel('Your message').fill('Tell me about usage-based billing.');
    await press(page.getByRole('button', { name: 'Run' }));
    await page.getByRole('button', { name: 'Running…' }).waitFor({ state: 'detached' });
    const count = (text: string) => page.evaluate((t: string) => document.querySelector('main').innerText.split(t).length - 1, text);
    const first = (await page.getByTestId('reply').innerText()).trim();
    expect(first.length).toBeGreaterThan(0);
    expect(await count(first)).toBe(1);
    await page.getByLabel('Your message').fill('And in one sentence?');
    await press(page.getByRole('button', { name: 'Run' }));
    await page.getByRole('button', { name: 'Running…' }).waitFor({ state: 'detached' });
    const second = (await page.getByTestId('reply').innerText()).trim();
    expect(await count(first)).toBe(1);
    expect(await count(second)).toBe(1);
    expect(await page.getByRole('list', { name: 'Conversation so far' }).getByText(first).count()).toBe(1);
    await capture(page, `findings-${label}-01-playground`, problems);
  });

  test('billing: amounts are checked in the page with plain words, and the button never echoes what was typed', async () => {
    await nav('Billing', 'Billing');
    const amount = page.getByLabel('Deposit amount (USD)');
    const before = (await billing()).balance;
    for (const [typed, error] of [
      ['abc', 'Enter dollars, e.g. 100 or 2.50.'],
      ['10.001', 'Use whole cents: at most 2 digits after the point, e.g. 10.25.'],
      ['99999999999999999999999', 'One deposit can be at most $999,999.99.'],
      ['1000000', 'One deposit can be at most $999,999.99.'],
      ['5', 'A deposit must be at least $10.00.'],
    ]) {
      await amount.fill(typed);
      await press(page.getByRole('button', { name: /^Deposit/ }));
      await page.getByText(error, { exact: true }).waitFor();
      expect(await page.getByRole('button', { name: /^Deposit/ }).innerText()).toBe('Deposit');
    }
    expect((await billing()).balance).toBe(before);
    await amount.fill('$1,250.5');
    await page.getByRole('button', { name: 'Deposit $1,250.50' }).waitFor();
    await amount.fill('20');
    await page.getByRole('button', { name: 'Deposit $20.00' }).waitFor();
  });

  test('billing: a new action clears the old messages; the balance shows cents with the exact figure on hover', async () => {
    await page.getByLabel(/Visa •••• 4242/).check();
    await press(page.getByRole('button', { name: 'Replace payment method' }));
    await page.getByText('Payment method saved.').waitFor();
    await press(page.getByRole('button', { name: 'Deposit $20.00' }));
    await page.getByText('Deposit of $20.00 succeeded.').waitFor();
    // Disarmed after the success: a second click would have been a second charge (a fresh Idempotency-Key).
    const disarmed = page.getByRole('button', { name: 'Deposited: edit the amount for another' });
    await disarmed.waitFor();
    expect(await disarmed.isDisabled()).toBe(true);
    // The statement's amounts stay on screen, a card per line on a phone, not in a scroll box.
    const closing = page.getByTestId('statement-closing');
    await closing.scrollIntoViewIfNeeded();
    const box = (await closing.boundingBox())!;
    expect(box.x + box.width).toBeLessThanOrEqual(viewport.width);
    expect(await closing.isVisible()).toBe(true);
    await page.getByText('Payment method saved.').waitFor({ state: 'detached' });
    // The playground calls left a balance finer than a cent.
    const exact = (await billing()).balance;
    expect(exact).toMatch(/\.\d{3,}$/);
    const tile = page.getByTestId('balance');
    const shown = await tile.locator('[data-exact]').evaluate((el: any) => el.firstChild.textContent);
    expect(shown).toMatch(/^\$\d{1,3}(,\d{3})*\.\d{2}$/);
    expect(await tile.locator('[data-exact]').getAttribute('title')).toBe(`Exactly $${exact}`);
    // Rounded toward zero: never more than there is.
    expect(shown).toBe(`$${exact.replace(/(\.\d{2})\d*$/, '$1')}`);
  });

  test('billing: a threshold above the balance asks before it charges; Cancel saves nothing', async () => {
    const balance = (await billing()).balance;
    await page.getByLabel('Reload automatically').check();
    await page.getByLabel('When the balance falls below (USD)').fill('5000');
    await page.getByLabel('Add this amount (USD)').fill('5000');
    await press(page.getByRole('button', { name: 'Save auto-reload' }));
    const dialog = page.getByRole('dialog', { name: 'Charge the card now?' });
    await dialog.getByText('charges the card on file $5,000.00 right away').waitFor();
    await capture(page, `findings-${label}-02-billing-confirm`, problems);
    await press(dialog.getByRole('button', { name: 'Cancel' }));
    await dialog.waitFor({ state: 'hidden' });
    expect((await billing()).autoReload?.enabled ?? false).toBe(false);

    // A threshold below the balance is saved without a question.
    await page.getByLabel('When the balance falls below (USD)').fill('1');
    await press(page.getByRole('button', { name: 'Save auto-reload' }));
    await page.getByText('Auto-reload saved.').waitFor();
    expect(await dialog.isVisible()).toBe(false);
    expect((await billing()).balance).toBe(balance);
    expect((await horizontalOverflow(page)).scrollWidth).toBeLessThanOrEqual(viewport.width);
    expect(problems).toEqual([]);
  });
});

describe('a member of an unfunded team workspace', () => {
  test('is told an admin must fund it, not to add a payment method; the first deposit rule is in plain words for the admin', async () => {
    const run = Date.now().toString(36);
    const admin = await signUpAndLogIn(server.url, { name: 'Olga Owner', email: `olga-${run}@example.com`, password: 'owner of the team' });
    const member = { name: 'Max Member', email: `max-${run}@example.com`, password: 'member of the team' };
    const maxApi = await signUpAndLogIn(server.url, member);
    const team = (await admin.call<{ workspaceId: string }>('POST', '/v1/workspaces', { name: 'Unfunded team' })).workspaceId;
    const inv = await admin.call<{ invitationId: string }>('POST', `/v1/workspaces/${team}/invitations`, { email: member.email });
    await maxApi.call('POST', `/v1/invitations/${inv.invitationId}/accept`);

    const ctx = await browser.newContext({ baseURL: server.url, viewport: PHONE, isMobile: true, hasTouch: true });
    const page = await ctx.newPage();
    await page.goto('/keys');
    await page.getByLabel('E-mail').fill(member.email);
    await page.getByLabel('Password').fill(member.password);
    await page.getByRole('button', { name: 'Log in' }).tap();
    await page.getByRole('heading', { level: 1, name: 'API keys' }).waitFor();
    await page.getByRole('button', { name: 'Menu' }).tap();
    await page.getByLabel('Workspace', { exact: true }).selectOption(team);
    await page.getByLabel('Key name').fill('my first key');
    await page.getByRole('button', { name: 'Create API key' }).tap();
    await page.getByText('Only an admin of Unfunded team can add the payment method and the first deposit: ask one of them.').waitFor();
    expect(await page.getByRole('link', { name: 'Go to Billing' }).count()).toBe(0);
    await ctx.close();

    // The admin, on the same team's billing page, is told the first deposit's minimum in plain words.
    await admin.call('POST', `/v1/workspaces/${team}/billing/payment-method`, { paymentMethodId: 'pm_card_visa' });
    const adminCtx = await browser.newContext({ baseURL: server.url, viewport: { width: 1280, height: 800 } });
    const adminPage = await adminCtx.newPage();
    await adminPage.goto('/billing');
    await adminPage.getByLabel('E-mail').fill(`olga-${run}@example.com`);
    await adminPage.getByLabel('Password').fill('owner of the team');
    await adminPage.getByRole('button', { name: 'Log in' }).click();
    await adminPage.getByRole('heading', { level: 1, name: 'Billing' }).waitFor();
    await adminPage.getByLabel('Workspace', { exact: true }).selectOption(team);
    await adminPage.getByLabel('Deposit amount (USD)').fill('50');
    await adminPage.getByRole('button', { name: /^Deposit/ }).click();
    await adminPage.getByText('Your first deposit must be at least $100.00.').waitFor();
    await adminCtx.close();
  });
});
