import type { Browser, BrowserContext, Page } from 'playwright-core';
import type { TestServer } from '../../support/harness';
import { fund, signUpAndLogIn, type ApiClient } from './support/api';
import { capture, ensurePortalBuilt, launchChromium, startPortalServer, watchProblems } from './support/browser';
import { headerHeight, horizontalOverflow, newPhoneContext, PHONE, tapNav, untappableControls } from './support/phone';

/**
 * The portal on a phone (390×844, touch): every page after login fits the screen's width, every
 * control can be tapped, the navigation folds into a menu, and keys and members are stacked
 * cards. The data is set up through the API; everything checked is done with taps in the page.
 */

jest.setTimeout(150_000);

const run = Date.now().toString(36);
const ada = { name: 'Ada Admin', email: `ada-phone-${run}@example.com`, password: 'correct horse battery' };
const bob = { name: 'Bob Builder', email: `bob-phone-${run}@example.com`, password: 'staple battery horse' };
const carol = { name: 'Carol Coder', email: `carol-phone-${run}@example.com`, password: 'battery staple correct' };
const LONG_TEAM = 'The Extraordinarily Long-Named Research and Development Workspace of Ada';
const LONG_KEY = 'support-bot-for-the-customer-service-team-in-production';

let server: TestServer;
let browser: Browser;
let ctx: BrowserContext;
let page: Page;
let adaApi: ApiClient & { workspaceId: string };
let teamId = '';
const problems: string[] = [];

const PAGES: [label: string, heading: string | RegExp][] = [
  ['Playground', 'Playground'],
  ['API keys', 'API keys'],
  ['Workspace', /^Workspace: /],
  ['Billing', 'Billing'],
  ['Usage', 'Usage'],
  ['Audit log', 'Audit log'],
];

/** The checks every page gets at phone size; the failures are collected, not thrown one by one. */
async function checkPage(label: string, shot: string): Promise<string[]> {
  const failures: string[] = [];
  const { scrollWidth, viewport } = await horizontalOverflow(page);
  if (scrollWidth > viewport) failures.push(`${label}: the page is ${scrollWidth} px wide on a ${viewport} px screen`);
  for (const miss of await untappableControls(page)) failures.push(`${label}: ${miss}`);
  const header = await headerHeight(page);
  if (header > 72) failures.push(`${label}: the header takes ${header} px`);
  await capture(page, shot, problems);
  return failures;
}

beforeAll(async () => {
  ensurePortalBuilt();
  server = await startPortalServer();
  adaApi = await signUpAndLogIn(server.url, ada);
  await fund(adaApi, adaApi.workspaceId);
  await adaApi.call('POST', `/v1/workspaces/${adaApi.workspaceId}/keys`, { name: LONG_KEY });
  teamId = (await adaApi.call<{ workspaceId: string }>('POST', '/v1/workspaces', { name: LONG_TEAM })).workspaceId;
  const bobApi = await signUpAndLogIn(server.url, bob);
  const inv = await adaApi.call<{ invitationId: string }>('POST', `/v1/workspaces/${teamId}/invitations`, { email: bob.email });
  await bobApi.call('POST', `/v1/invitations/${inv.invitationId}/accept`);
  await signUpAndLogIn(server.url, carol);

  browser = await launchChromium();
  ctx = await newPhoneContext(browser, server.url);
  page = await ctx.newPage();
  watchProblems(page, 'ada-phone', problems);
  await page.goto('/');
  await page.getByLabel('E-mail').fill(ada.email);
  await page.getByLabel('Password').fill(ada.password);
  await page.getByRole('button', { name: 'Log in' }).tap();
  await page.getByRole('heading', { level: 1, name: 'Playground' }).waitFor();
});

afterAll(async () => {
  await browser?.close();
  await server?.close();
});

describe('the portal on a phone (390×844, touch)', () => {
  test('the navigation is a menu: closed, the header is one short row; open, every link and the switcher can be tapped', async () => {
    expect(await page.getByRole('navigation', { name: 'Portal' }).isVisible()).toBe(false);
    expect(await headerHeight(page)).toBeLessThanOrEqual(72);
    const menu = page.getByRole('button', { name: 'Menu' });
    expect(await menu.getAttribute('aria-expanded')).toBe('false');
    await menu.tap();
    expect(await menu.getAttribute('aria-expanded')).toBe('true');
    await page.getByRole('navigation', { name: 'Portal' }).waitFor();
    expect(await untappableControls(page)).toEqual([]);
    expect((await horizontalOverflow(page)).scrollWidth).toBeLessThanOrEqual(PHONE.width);
    await capture(page, 'phone-01-menu-open', problems);
    // Escape closes it; so does choosing a page.
    await page.keyboard.press('Escape');
    await page.getByRole('navigation', { name: 'Portal' }).waitFor({ state: 'hidden' });
    await tapNav(page, 'Usage', 'Usage');
    expect(await page.getByRole('navigation', { name: 'Portal' }).isVisible()).toBe(false);
  });

  test('every page after login fits the screen and every control on it can be tapped', async () => {
    const failures: string[] = [];
    for (const [label, heading] of PAGES) {
      await tapNav(page, label, heading);
      failures.push(...(await checkPage(label, `phone-02-${label.toLowerCase().replace(/\W+/g, '-')}`)));
      if (label === 'Usage') {
        // The charts are drawn at their shown width: axis labels keep their 12 px, not 4 px.
        await page.locator('.chart .axis-label').first().waitFor();
        const heights = await page
          .locator('.chart .axis-label')
          .evaluateAll((els: any[]) => els.map((e) => e.getBoundingClientRect().height));
        if (Math.min(...heights) < 11) failures.push(`Usage: chart labels are ${Math.min(...heights).toFixed(1)} px high`);
      }
    }
    expect(failures).toEqual([]);
  });

  test('a key is created and listed as a card; the page stays within the screen with its secret shown', async () => {
    await tapNav(page, 'API keys', 'API keys');
    await page.getByLabel('Key name').fill(`${LONG_KEY}-2`);
    await page.getByRole('button', { name: 'Create API key' }).tap();
    await page.getByLabel(`Secret of the key ${LONG_KEY}-2`).waitFor();
    const rows = page.getByTestId('key-row');
    await rows.nth(1).waitFor();
    expect(await rows.count()).toBe(2);
    // Stacked: each key is a block as wide as the list, not a table row wider than the screen.
    const box = await rows.first().boundingBox();
    expect(box!.width).toBeLessThanOrEqual(PHONE.width);
    expect(await checkPage('API keys with a new secret', 'phone-03-keys-created')).toEqual([]);
  });

  test('in a team workspace with a long name, an invitation is sent by a tap and a member removed by a tap', async () => {
    await page.getByRole('button', { name: 'Menu' }).tap();
    await page.getByLabel('Workspace', { exact: true }).selectOption(teamId);
    await tapNav(page, 'Workspace', `Workspace: ${LONG_TEAM}`);
    expect(await checkPage('Workspace (team)', 'phone-04-team-workspace')).toEqual([]);

    await page.getByLabel('E-mail address').fill(carol.email);
    await page.getByRole('button', { name: 'Send invitation' }).tap();
    await page.getByText(`Invitation sent to ${carol.email}.`).waitFor();

    const bobCard = page.getByRole('row', { name: /Bob Builder/ });
    await bobCard.getByRole('button', { name: 'Remove Bob Builder from the workspace' }).tap();
    const dialog = page.getByRole('dialog', { name: 'Remove this member?' });
    await dialog.waitFor();
    await capture(page, 'phone-05-remove-dialog', problems);
    await dialog.getByRole('button', { name: 'Remove member' }).tap();
    await page.getByText(`Bob Builder was removed from ${LONG_TEAM}.`).waitFor();
    await bobCard.waitFor({ state: 'detached' });
    expect(await checkPage('Workspace after removing', 'phone-06-team-removed')).toEqual([]);
    expect(problems).toEqual([]);
  });
});
