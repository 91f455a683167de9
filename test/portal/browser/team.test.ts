import type { Browser, BrowserContext, Page } from 'playwright-core';
import type { TestServer } from '../../support/harness';
import { fund, infer, signUpAndLogIn, type ApiClient } from './support/api';
import { capture, ensurePortalBuilt, launchChromium, readDownload, startPortalServer, watchProblems } from './support/browser';
import { horizontalOverflow, newPhoneContext, PHONE, tapNav, untappableControls } from './support/phone';

declare const document: any;

/**
 * The portal controls for roles, revoking, leaving, the audit log and key budgets, with real clicks
 * against a started service: the admin (Ada) works at desktop size, the member (Bob) in a second
 * browser; the new page and controls are checked at phone size too.
 */

jest.setTimeout(180_000);

const run = Date.now().toString(36);
const ada = { name: 'Ada Admin', email: `ada-team-${run}@example.com`, password: 'correct horse battery' };
const bob = { name: 'Bob Builder', email: `bob-team-${run}@example.com`, password: 'staple battery horse' };
const carol = { name: 'Carol Coder', email: `carol-team-${run}@example.com`, password: 'battery staple correct' };
const TEAM = 'Ada Labs';

let server: TestServer;
let browser: Browser;
let adaCtx: BrowserContext;
let bobCtx: BrowserContext;
let page: Page; // Ada
let bobPage: Page;
let adaApi: ApiClient & { workspaceId: string; userId: string };
let bobApi: ApiClient & { workspaceId: string; userId: string };
let carolApi: ApiClient & { workspaceId: string; userId: string };
let team = '';
const problems: string[] = [];

async function logIn(p: Page, who: typeof ada, landing: string) {
  await p.goto(landing);
  await p.getByLabel('E-mail').fill(who.email);
  await p.getByLabel('Password').fill(who.password);
  await p.getByRole('button', { name: 'Log in' }).click();
}

async function nav(p: Page, label: string, heading: string | RegExp) {
  await p.getByRole('navigation', { name: 'Portal' }).getByRole('link', { name: label, exact: true }).click();
  await p.getByRole('heading', { level: 1, name: heading }).waitFor();
}

async function inviteAndAccept(who: ApiClient, email: string) {
  const inv = await adaApi.call<{ invitationId: string }>('POST', `/v1/workspaces/${team}/invitations`, { email });
  await who.call('POST', `/v1/invitations/${inv.invitationId}/accept`);
}

const memberRole = async (userId: string) =>
  (await adaApi.call<{ members: { userId: string; role: string }[] }>('GET', `/v1/workspaces/${team}/members`)).members.find(
    (m) => m.userId === userId,
  )?.role;

beforeAll(async () => {
  ensurePortalBuilt();
  server = await startPortalServer();
  adaApi = await signUpAndLogIn(server.url, ada);
  bobApi = await signUpAndLogIn(server.url, bob);
  carolApi = await signUpAndLogIn(server.url, carol);
  team = (await adaApi.call<{ workspaceId: string }>('POST', '/v1/workspaces', { name: TEAM })).workspaceId;
  await fund(adaApi, team);
  await inviteAndAccept(bobApi, bob.email);

  browser = await launchChromium();
  adaCtx = await browser.newContext({ baseURL: server.url, viewport: { width: 1280, height: 900 } });
  bobCtx = await browser.newContext({ baseURL: server.url, viewport: { width: 1280, height: 900 } });
  page = await adaCtx.newPage();
  bobPage = await bobCtx.newPage();
  // 403 (a demoted admin's refused invitation) and 409 (the last admin leaving) are provoked on purpose.
  watchProblems(page, 'ada', problems, [409]);
  watchProblems(bobPage, 'bob', problems, [403]);
  // Both work in the team workspace (the choice is kept in localStorage per browser).
  for (const [p, who] of [
    [page, ada],
    [bobPage, bob],
  ] as const) {
    await logIn(p, who, '/workspace');
    await p.getByRole('heading', { level: 1, name: /^Workspace: / }).waitFor();
    await p.getByLabel('Workspace', { exact: true }).selectOption(team);
    await p.getByRole('heading', { level: 1, name: `Workspace: ${TEAM}` }).waitFor();
  }
});

afterAll(async () => {
  await browser?.close();
  await server?.close();
});

describe('team controls in the portal', () => {
  test('an admin makes a member an admin and back; the sole admin is not offered "Make member"', async () => {
    const bobRow = page.getByRole('row', { name: /Bob Builder/ });
    const adaRow = page.getByRole('row', { name: /Ada Admin \(you\)/ });
    expect(await adaRow.getByRole('button', { name: /^Make member/ }).count()).toBe(0);
    expect(await bobPage.getByRole('link', { name: 'Audit log' }).count()).toBe(0);

    await bobRow.getByRole('button', { name: 'Make admin (Bob Builder)' }).click();
    await page.getByText(`Bob Builder is now an admin of ${TEAM}.`).waitFor();
    await bobRow.getByText('admin', { exact: true }).waitFor();
    expect(await memberRole(bobApi.userId)).toBe('admin');
    // Now there are two admins: Ada may step down too.
    await adaRow.getByRole('button', { name: 'Make member (you)' }).waitFor();
    await capture(page, 'team-01-two-admins', problems);

    // Bob's portal, read afresh, offers him the admin pages.
    await bobPage.reload();
    await bobPage.getByRole('link', { name: 'Audit log' }).waitFor();

    await bobRow.getByRole('button', { name: 'Make member (Bob Builder)' }).click();
    await page.getByText(`Bob Builder is now a member of ${TEAM}.`).waitFor();
    expect(await memberRole(bobApi.userId)).toBe('member');
    // The notice shows before the member list is read again: the button goes with that re-read.
    await adaRow.getByRole('button', { name: /^Make member/ }).waitFor({ state: 'detached', timeout: 5000 });
    expect(await adaRow.getByRole('button', { name: /^Make member/ }).count()).toBe(0);
  });

  test('a demoted admin loses the admin controls at their next action', async () => {
    await adaApi.call('PUT', `/v1/workspaces/${team}/members/${bobApi.userId}`, { role: 'admin' });
    await bobPage.reload();
    await bobPage.getByRole('heading', { level: 2, name: 'Invite a member' }).waitFor();
    await adaApi.call('PUT', `/v1/workspaces/${team}/members/${bobApi.userId}`, { role: 'member' });
    // Bob's open page still shows the form; sending is refused, and the page drops the admin parts.
    await bobPage.getByLabel('E-mail address').fill(carol.email);
    await bobPage.getByRole('button', { name: 'Send invitation' }).click();
    await bobPage.getByRole('heading', { level: 2, name: 'Invite a member' }).waitFor({ state: 'detached' });
    await bobPage.getByText('You are a member here.', { exact: false }).waitFor();
    expect(await bobPage.getByRole('link', { name: 'Audit log' }).count()).toBe(0);
  });

  test('an admin steps down after a confirmation, and is made admin again', async () => {
    await adaApi.call('PUT', `/v1/workspaces/${team}/members/${bobApi.userId}`, { role: 'admin' });
    await nav(page, 'Billing', 'Billing');
    await nav(page, 'Workspace', `Workspace: ${TEAM}`);
    await page
      .getByRole('row', { name: /Ada Admin \(you\)/ })
      .getByRole('button', { name: 'Make member (you)' })
      .click();
    const dialog = page.getByRole('dialog', { name: 'Stop being an admin?' });
    await dialog.waitFor();
    await dialog.getByRole('button', { name: 'Make me a member' }).click();
    await page.getByText(`You are now a member of ${TEAM}, no longer an admin.`).waitFor();
    await page.getByText('You are a member here.', { exact: false }).waitFor();
    expect(await page.getByRole('button', { name: 'Send invitation' }).count()).toBe(0);
    expect(await page.getByRole('link', { name: 'Audit log' }).count()).toBe(0);
    expect(await memberRole(adaApi.userId)).toBe('member');
    // Bob, now the admin, gives it back from his portal.
    await bobPage.reload();
    await bobPage
      .getByRole('row', { name: /Ada Admin/ })
      .getByRole('button', { name: 'Make admin (Ada Admin)' })
      .click();
    await bobPage.getByText(`Ada Admin is now an admin of ${TEAM}.`).waitFor();
    await adaApi.call('PUT', `/v1/workspaces/${team}/members/${bobApi.userId}`, { role: 'member' });
    await page.reload();
    await page.getByRole('heading', { level: 2, name: 'Invite a member' }).waitFor();
  });

  test('a pending invitation is revoked from beside it, and disappears from the invitee’s list', async () => {
    await page.getByLabel('E-mail address').fill(carol.email);
    await page.getByRole('button', { name: 'Send invitation' }).click();
    const item = page.getByTestId('sent-invitation').filter({ hasText: carol.email });
    await item.waitFor();
    expect((await carolApi.call<{ invitations: unknown[] }>('GET', '/v1/invitations')).invitations).toHaveLength(1);
    await capture(page, 'team-02-pending-invitation', problems);
    await item.getByRole('button', { name: `Revoke the invitation to ${carol.email}` }).click();
    await page.getByText(`The invitation to ${carol.email} was revoked`).waitFor();
    await item.waitFor({ state: 'detached' });
    expect((await carolApi.call<{ invitations: unknown[] }>('GET', '/v1/invitations')).invitations).toHaveLength(0);
    // A member sees the pending list but no Revoke buttons.
    await adaApi.call('POST', `/v1/workspaces/${team}/invitations`, { email: carol.email });
    await bobPage.reload();
    await bobPage.getByTestId('sent-invitation').filter({ hasText: carol.email }).waitFor();
    expect(await bobPage.getByRole('button', { name: /^Revoke/ }).count()).toBe(0);
  });

  test('an invitee accepting an invitation revoked meanwhile is told so, and it leaves their page', async () => {
    const carolCtx = await browser.newContext({ baseURL: server.url, viewport: { width: 1280, height: 900 } });
    const carolPage = await carolCtx.newPage();
    watchProblems(carolPage, 'carol', problems, [409]);
    await logIn(carolPage, carol, '/');
    const invitation = carolPage.getByTestId('invitation');
    await invitation.waitFor();
    const pending = (
      await adaApi.call<{ invitations: { invitationId: string; email: string }[] }>('GET', `/v1/workspaces/${team}/invitations`)
    ).invitations;
    await adaApi.call('DELETE', `/v1/workspaces/${team}/invitations/${pending.find((i) => i.email === carol.email)!.invitationId}`);
    await invitation.getByRole('button', { name: /^Accept/ }).click();
    await carolPage.getByText(`The invitation to ${TEAM} is no longer open`, { exact: false }).waitFor();
    await invitation.waitFor({ state: 'detached' });
    await carolCtx.close();
    await adaApi.call('POST', `/v1/workspaces/${team}/invitations`, { email: carol.email });
  });

  test('a removed member with the Keys page open is told so, and lands in their own workspace', async () => {
    await nav(bobPage, 'API keys', 'API keys');
    await adaApi.call('DELETE', `/v1/workspaces/${team}/members/${bobApi.userId}`);
    await bobPage.getByLabel('Key name').fill('too late');
    await bobPage.getByRole('button', { name: 'Create API key' }).click();
    await bobPage.getByText(`You are no longer a member of ${TEAM}.`).waitFor();
    await bobPage.getByText('Keys of the workspace Personal', { exact: false }).waitFor();
    const options = await bobPage.getByLabel('Workspace', { exact: true }).locator('option').allInnerTexts();
    expect(options.join('|')).not.toContain(TEAM);
    expect(await bobPage.getByText('Workspace not found', { exact: true }).count()).toBe(0);
  });

  test('a member leaves after a confirmation; the last admin is refused with the reason', async () => {
    await inviteAndAccept(bobApi, bob.email);
    await bobPage.reload();
    await bobPage.getByLabel('Workspace', { exact: true }).selectOption(team);
    await nav(bobPage, 'Workspace', `Workspace: ${TEAM}`);
    await bobPage.getByRole('button', { name: `Leave ${TEAM}` }).click();
    const dialog = bobPage.getByRole('dialog', { name: 'Leave this workspace?' });
    await dialog.getByRole('button', { name: 'Leave workspace' }).click();
    await bobPage.getByText(`You left ${TEAM}. The keys you created there stay with it.`).waitFor();
    const options = await bobPage.getByLabel('Workspace', { exact: true }).locator('option').allInnerTexts();
    expect(options.join('|')).not.toContain(TEAM);
    expect(await memberRole(bobApi.userId)).toBeUndefined();

    await page.reload();
    await page.getByRole('button', { name: `Leave ${TEAM}` }).click();
    const adaDialog = page.getByRole('dialog', { name: 'Leave this workspace?' });
    await adaDialog.getByRole('button', { name: 'Leave workspace' }).click();
    await adaDialog
      .getByRole('alert')
      .getByText(/last admin/)
      .waitFor();
    await capture(page, 'team-03-last-admin-cannot-leave', problems);
    await adaDialog.getByRole('button', { name: 'Cancel' }).click();
    expect(await memberRole(adaApi.userId)).toBe('admin');
  });

  test('a key gets a monthly budget in plain words, and the list shows its month-to-date spend', async () => {
    const key = await adaApi.call<{ keyId: string; secret: string }>('POST', `/v1/workspaces/${team}/keys`, { name: 'budgeted key' });
    await nav(page, 'API keys', 'API keys');
    const row = page.getByRole('row', { name: /budgeted key/ });
    await row.getByText('$0.00 spent this month · no budget').waitFor();
    await row.getByRole('button', { name: 'Edit the key budgeted key' }).click();
    const dialog = page.getByRole('dialog', { name: 'Edit key' });
    await dialog.getByLabel('Budget (USD)').fill('lots');
    await dialog.getByRole('button', { name: 'Save key' }).click();
    await dialog.getByText('Enter dollars, e.g. 100 or 2.50.').waitFor();
    await dialog.getByLabel('Budget (USD)').fill('0.05');
    await dialog.getByLabel('Key name').fill('budgeted key eu');
    await dialog.getByRole('button', { name: 'Save key' }).click();
    await page.getByText('The key “budgeted key eu” may spend $0.05 per month (UTC)', { exact: false }).waitFor();
    const renamed = page.getByRole('row', { name: /budgeted key eu/ });
    await renamed.getByText('$0.00 of $0.05').waitFor();
    const listed = (
      await adaApi.call<{ keys: { keyId: string; name: string; monthlyBudget: string }[] }>('GET', `/v1/workspaces/${team}/keys`)
    ).keys.find((k) => k.keyId === key.keyId)!;
    expect(listed).toMatchObject({ name: 'budgeted key eu', monthlyBudget: '0.05' });

    // Two requests spend from it; the list, read afresh, shows the same month-to-date figure as the API.
    for (let i = 0; i < 2; i++) expect(await infer(server.url, key.secret)).toBe(200);
    // The debits are recorded just after each reply: wait for both in the ledger.
    const deadline = Date.now() + 10_000;
    for (;;) {
      const ledger = await adaApi.call<{ entries: { type: string; keyId?: string }[] }>(
        'GET',
        `/v1/workspaces/${team}/billing/ledger?limit=500`,
      );
      if (ledger.entries.filter((e) => e.type === 'TokensDebited' && e.keyId === key.keyId).length === 2) break;
      if (Date.now() > deadline) throw new Error('the two debits did not arrive');
      await new Promise((r) => setTimeout(r, 100));
    }
    const spent = (
      await adaApi.call<{ keys: { keyId: string; monthToDateSpend: string }[] }>('GET', `/v1/workspaces/${team}/keys`)
    ).keys.find((k) => k.keyId === key.keyId)!.monthToDateSpend;
    expect(spent).not.toBe('0');
    await nav(page, 'Usage', 'Usage');
    await nav(page, 'API keys', 'API keys');
    const exact = await renamed.locator('[data-exact]').getAttribute('data-exact');
    expect(exact).toBe(spent);
    await renamed.getByRole('img', { name: /% of the monthly budget used/ }).waitFor();
    await capture(page, 'team-04-key-budget', problems);

    // Emptying the field removes the budget.
    await renamed.getByRole('button', { name: 'Edit the key budgeted key eu' }).click();
    await dialog.getByLabel('Budget (USD)').fill('');
    await dialog.getByRole('button', { name: 'Save key' }).click();
    await page.getByText('The key “budgeted key eu” has no budget now.').waitFor();
    await renamed.getByText(/spent this month · no budget/).waitFor();

    // A weekly budget: the period select, the message and the meter say so.
    await renamed.getByRole('button', { name: 'Edit the key budgeted key eu' }).click();
    await dialog.getByLabel('Budget (USD)').fill('2');
    await dialog.getByLabel('Resets').selectOption('weekly');
    await dialog.getByRole('button', { name: 'Save key' }).click();
    await page.getByText('The key “budgeted key eu” may spend $2.00 per week (UTC)', { exact: false }).waitFor();
    await renamed.getByRole('img', { name: /% of the weekly budget used/ }).waitFor();
    const weekly = (
      await adaApi.call<{ keys: { keyId: string; budget: string; budgetPeriod: string }[] }>('GET', `/v1/workspaces/${team}/keys`)
    ).keys.find((k) => k.keyId === key.keyId);
    expect(weekly).toMatchObject({ budget: '2', budgetPeriod: 'weekly' });
  });

  test('an admin gives a member a daily budget across their keys; the members page shows it', async () => {
    await nav(page, 'Billing', 'Billing');
    await nav(page, 'Workspace', `Workspace: ${TEAM}`);
    const row = page.getByRole('row', { name: /Ada Admin \(you\)/ });
    await row.getByText('no budget').waitFor();
    await row.getByRole('button', { name: 'Budget for you' }).click();
    const dialog = page.getByRole('dialog', { name: 'Budget for Ada Admin' });
    await dialog.getByLabel('Member budget (USD)').fill('3');
    await dialog.getByLabel('Resets').selectOption('daily');
    await dialog.getByRole('button', { name: 'Save budget' }).click();
    await page.getByText('may spend $3.00 per day together', { exact: false }).waitFor();
    await row.getByText(/of \$3\.00 per day/).waitFor();
    const me = (
      await adaApi.call<{ members: { userId: string; budget: { budget: string; period: string } | null }[] }>(
        'GET',
        `/v1/workspaces/${team}/members`,
      )
    ).members.find((m) => m.userId === adaApi.userId);
    expect(me?.budget).toMatchObject({ budget: '3', period: 'daily' });
    await adaApi.call('PUT', `/v1/workspaces/${team}/members/${adaApi.userId}/budget`, { budget: null });
  });

  test('the audit log page lists who did what, pages back, and downloads as CSV', async () => {
    // Enough renames for a second page.
    for (let i = 0; i < 55; i++) await adaApi.call('PATCH', `/v1/workspaces/${team}`, { name: `${TEAM} ${i % 2 ? 'B' : 'A'}` });
    await adaApi.call('PATCH', `/v1/workspaces/${team}`, { name: TEAM });
    await nav(page, 'Audit log', 'Audit log');
    const rows = page.getByTestId('audit-row');
    await rows.first().waitFor();
    expect(await rows.count()).toBe(50);
    await page.getByRole('button', { name: 'Show older entries' }).click();
    await page.locator('[data-testid="audit-row"][data-action="member.role_changed"]').first().waitFor();
    expect(await rows.count()).toBeGreaterThan(50);
    const text = await page.getByRole('table', { name: 'Audit log, newest first' }).innerText();
    for (const expected of [
      'Changed a role',
      'Revoked an invitation',
      'Left the workspace',
      'Removed a member',
      'Changed a key’s budget',
      'role admin, was member',
    ]) {
      expect(text).toContain(expected);
    }
    expect(text).not.toMatch(/tgk[0-9A-Za-z]{20,}/); // never a secret
    await capture(page, 'team-05-audit', problems);

    const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('link', { name: 'Download CSV' }).click()]);
    const csv = await readDownload(download);
    expect(csv.split('\r\n')[0]).toBe(
      'time,actor_type,actor_id,actor_name,actor_email,action,target_type,target_id,target_name,outcome,details',
    );
    expect(csv).toContain('member.role_changed');

    // A month for finance: the table and the CSV narrow to it.
    const thisMonth = new Date().toLocaleDateString('en-US', { month: 'long', year: 'numeric', timeZone: 'UTC' });
    const before = new Date(Date.UTC(new Date().getUTCFullYear(), new Date().getUTCMonth() - 1, 1));
    const lastMonth = before.toLocaleDateString('en-US', { month: 'long', year: 'numeric', timeZone: 'UTC' });
    await page.getByLabel('Period (UTC)').selectOption({ label: lastMonth });
    await page.getByText(`Nothing happened in ${lastMonth}.`).waitFor();
    const [monthly] = await Promise.all([
      page.waitForEvent('download'),
      page.getByRole('link', { name: `Download CSV of ${lastMonth}` }).click(),
    ]);
    expect((await readDownload(monthly)).trim().split('\r\n')).toHaveLength(1); // the header only
    await page.getByLabel('Period (UTC)').selectOption({ label: thisMonth });
    await rows.first().waitFor();
    expect(await rows.count()).toBe(50);

    // A member opening the address is told it is for admins.
    await inviteAndAccept(bobApi, bob.email);
    await bobPage.goto('/audit');
    await bobPage.getByLabel('Workspace', { exact: true }).selectOption(team);
    await bobPage.getByText(`Only admins of ${TEAM} can read its audit log.`).waitFor();
  });

  test('at phone size the new controls and the audit page fit the screen and can be tapped', async () => {
    await carolApi.call('GET', '/v1/me'); // Carol has a pending invitation: the Revoke button is on the page
    const phoneCtx = await newPhoneContext(browser, server.url);
    const phone = await phoneCtx.newPage();
    watchProblems(phone, 'ada-phone', problems);
    await logIn(phone, ada, '/workspace');
    await phone.getByRole('heading', { level: 1, name: /^Workspace: / }).waitFor();
    await phone.getByRole('button', { name: 'Menu' }).tap();
    await phone.getByLabel('Workspace', { exact: true }).selectOption(team);
    await phone.getByRole('heading', { level: 1, name: `Workspace: ${TEAM}` }).waitFor();
    const failures: string[] = [];
    for (const [label, heading] of [
      ['Workspace', `Workspace: ${TEAM}`],
      ['API keys', 'API keys'],
      ['Audit log', 'Audit log'],
    ] as const) {
      await tapNav(phone, label, heading);
      await phone.locator('main .table, main .muted').first().waitFor();
      const { scrollWidth } = await horizontalOverflow(phone);
      if (scrollWidth > PHONE.width) failures.push(`${label}: ${scrollWidth} px wide`);
      failures.push(...(await untappableControls(phone)).map((m) => `${label}: ${m}`));
      await capture(phone, `team-phone-${label.toLowerCase().replace(/\W+/g, '-')}`, problems);
    }
    expect(failures).toEqual([]);
    // The budget dialog, by taps.
    await tapNav(phone, 'API keys', 'API keys');
    await phone.getByRole('button', { name: 'Edit the key budgeted key eu' }).tap();
    const dialog = phone.getByRole('dialog', { name: 'Edit key' });
    await dialog.getByLabel('Budget (USD)').fill('1.5');
    await dialog.getByRole('button', { name: 'Save key' }).tap();
    await phone.getByText('may spend $1.50 per week', { exact: false }).waitFor();
    expect(await phone.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(PHONE.width);
    await phoneCtx.close();
    expect(problems).toEqual([]);
  });

  test('a deleted key’s usage is shown by its name, marked deleted', async () => {
    const keys = (await adaApi.call<{ keys: { keyId: string; name: string }[] }>('GET', `/v1/workspaces/${team}/keys`)).keys;
    const budgeted = keys.find((k) => k.name === 'budgeted key eu')!;
    await adaApi.call('DELETE', `/v1/workspaces/${team}/keys/${budgeted.keyId}`);
    await nav(page, 'Usage', 'Usage');
    await page
      .getByRole('list', { name: /Requests per minute legend/ })
      .getByText('budgeted key eu (deleted key)')
      .waitFor();
    expect(await page.getByText(/deleted key [0-9a-f]{8}/).count()).toBe(0);
  });
});
