import { randomUUID } from 'node:crypto';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { hashPassword } from '../../../src/accounts/sessions/passwords';
import { streams } from '../../../src/platform/streams';
import type { TestServer } from '../../support/harness';
import { POLICY_VERSION } from '../../support/policy';
import { capture, ensurePortalBuilt, launchChromium, startPortalServer, watchProblems } from './support/browser';

/**
 * The usage policy and key rolling in the portal: the rules and their checkbox at signup, the page
 * of rules, the one-time question to an account that has not accepted them, the reminder beside
 * "Create API key", the playground's link, and "Roll key" with a grace period.
 */
jest.setTimeout(120_000);

const run = Date.now().toString(36);
const PASSWORD = 'a fine long password';
let server: TestServer;
let browser: Browser;
const problems: string[] = [];

beforeAll(async () => {
  ensurePortalBuilt();
  server = await startPortalServer();
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
  await server?.close();
});

async function newPage(label: string): Promise<{ ctx: BrowserContext; page: Page }> {
  const ctx = await browser.newContext({ baseURL: server.url, viewport: { width: 1280, height: 900 } });
  const page = await ctx.newPage();
  watchProblems(page, label, problems);
  return { ctx, page };
}

async function call(method: string, path: string, body?: unknown, token?: string) {
  const res = await fetch(server.url + path, {
    method,
    headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

const infer = async (secret: string) =>
  (
    await fetch(`${server.url}/external/api/inference`, {
      method: 'POST',
      headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
      body: JSON.stringify({ context: [{ type: 'Human', text: 'Hi' }], config: 'service_3_pi', max_tokens: 2 }),
    })
  ).status;

async function logIn(page: Page, email: string) {
  await page.goto('/login');
  await page.getByRole('heading', { name: 'Log in' }).waitFor();
  await page.getByLabel('E-mail').fill(email);
  await page.getByLabel('Password').fill(PASSWORD);
  await page.getByRole('button', { name: 'Log in' }).click();
}

test('signup shows the rules and needs the checkbox; the acceptance is recorded', async () => {
  const { ctx, page } = await newPage('signup');
  const email = `signup-${run}@example.com`;
  await page.goto('/signup');
  await page.getByRole('heading', { name: 'Create your account' }).waitFor();
  const rules = page.getByRole('region', { name: 'Usage policy' }).getByRole('listitem');
  await rules.first().waitFor();
  expect(await rules.count()).toBe(6);
  expect(await rules.nth(2).textContent()).toMatch(/train/i);
  await page.getByLabel('Name').fill('Sign Up');
  await page.getByLabel('E-mail').fill(email);
  await page.getByLabel('Password').fill(PASSWORD);
  await capture(page, 'policy-01-signup', problems);

  // Without the checkbox the form is not sent: no account exists.
  await page.getByRole('button', { name: 'Sign up' }).click();
  expect(
    await page
      .getByLabel(/I accept the usage policy/)
      .evaluate((el) => (el as unknown as { validity: { valueMissing: boolean } }).validity.valueMissing),
  ).toBe(true);
  expect((await call('POST', '/v1/login', { email, password: PASSWORD })).status).toBe(401);

  await page.getByLabel(`I accept the usage policy (version ${POLICY_VERSION})`).check();
  await page.getByRole('button', { name: 'Sign up' }).click();
  await page.getByRole('heading', { level: 1, name: 'Billing' }).waitFor();
  const login = await call('POST', '/v1/login', { email, password: PASSWORD });
  const me = await call('GET', '/v1/me', undefined, login.body.sessionToken);
  expect(me.body.usagePolicy).toMatchObject({ accepted: true, acceptedVersion: POLICY_VERSION });
  // A new account is not asked again.
  expect(await page.getByRole('dialog').count()).toBe(0);
  await ctx.close();
});

test('the rules have their own page, signed out too', async () => {
  const { ctx, page } = await newPage('page');
  await page.goto('/usage-policy');
  await page.getByRole('heading', { level: 1, name: 'Usage policy' }).waitFor();
  await page.getByText(`Version ${POLICY_VERSION}, effective`).waitFor();
  expect(await page.locator('.policy-rules li').count()).toBe(6);
  expect(new URL(page.url()).pathname).toBe('/usage-policy');
  await capture(page, 'policy-02-page', problems);
  await ctx.close();
});

test('an account from before the rules is asked once; keys wait for the acceptance; then roll a key with a grace period', async () => {
  // The account as it was before acceptance was recorded: registered, never accepted.
  const email = `legacy-${run}@example.com`;
  const userId = randomUUID();
  const s = server.services;
  await s.store.append(streams.legacyEmail(email), [{ id: randomUUID(), type: 'EmailClaimed', data: { email, userId } }], {
    expectedRevision: 'no_stream',
  });
  const done = await s.store.append(
    streams.user(userId),
    [{ id: randomUUID(), type: 'UserRegistered', data: { userId, email, name: 'Lee Gacy', passwordHash: await hashPassword(PASSWORD) } }],
    { expectedRevision: 'no_stream' },
  );
  await s.progress.waitFor(done.position, 5000);
  const token = (await call('POST', '/v1/login', { email, password: PASSWORD })).body.sessionToken as string;
  const ws = (await call('GET', '/v1/me', undefined, token)).body.workspaces[0].workspaceId as string;
  await call('POST', `/v1/workspaces/${ws}/billing/payment-method`, { paymentMethodId: 'pm_card_visa' }, token);
  const dep = await fetch(`${server.url}/v1/workspaces/${ws}/billing/deposits`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}`, 'idempotency-key': `legacy-${run}` },
    body: JSON.stringify({ amount: '100' }),
  });
  expect(dep.status).toBeLessThan(300);

  const { ctx, page } = await newPage('legacy');
  await logIn(page, email);
  const dialog = page.getByRole('dialog', { name: 'Please accept the usage policy' });
  await dialog.waitFor();
  expect(await dialog.getByRole('listitem').count()).toBe(6);
  await capture(page, 'policy-03-asked', problems);
  await dialog.getByRole('button', { name: 'Later' }).click();
  await dialog.waitFor({ state: 'hidden' });

  // Asked once: moving around does not ask again.
  await page.getByRole('navigation', { name: 'Portal' }).getByRole('link', { name: 'API keys', exact: true }).click();
  await page.getByRole('heading', { level: 1, name: 'API keys' }).waitFor();
  expect(await page.getByRole('dialog').count()).toBe(0);
  await page.getByText('Keep keys secret: never in client-side code, never transferred.').waitFor();

  // The keys page says why before a key is tried, and where to go.
  await page.getByText(`You have not accepted the usage policy (version ${POLICY_VERSION})`).waitFor();
  await page.getByRole('link', { name: 'Read and accept the usage policy' }).click();
  await page.getByRole('heading', { level: 1, name: 'Usage policy' }).waitFor();
  await page.getByRole('button', { name: `Accept version ${POLICY_VERSION}` }).click();
  await page.getByText('You accepted this version.').waitFor();
  const stream = await s.store.readStream(streams.user(userId));
  expect(stream.filter((e) => e.type === 'UsagePolicyAccepted').map((e) => e.data)).toEqual([{ userId, version: POLICY_VERSION }]);

  await page.getByRole('navigation', { name: 'Portal' }).getByRole('link', { name: 'API keys', exact: true }).click();
  await page.getByLabel('Key name').fill('support bot');
  await page.getByRole('button', { name: 'Create API key' }).click();
  const firstSecret = await page.locator('#new-secret').inputValue();
  expect(await infer(firstSecret)).toBe(200);

  // Roll it with a one-hour grace period: both secrets work.
  await page.getByRole('button', { name: 'Roll key support bot' }).click();
  const roll = page.getByRole('dialog', { name: 'Roll this key?' });
  await roll.waitFor();
  await roll.getByLabel('In 1 hour').check();
  await capture(page, 'policy-04-roll', problems);
  await roll.getByRole('button', { name: 'Roll key' }).click();
  await page.getByRole('heading', { name: 'New secret for “support bot”' }).waitFor();
  await page.getByText(/The old secret works until/).waitFor();
  const secondSecret = await page.locator('#rolled-secret').inputValue();
  expect(secondSecret).not.toBe(firstSecret);
  expect(await infer(firstSecret)).toBe(200);
  expect(await infer(secondSecret)).toBe(200);
  const row = page.getByTestId('key-row').filter({ hasText: 'support bot' });
  await row.getByText(`${secondSecret.slice(0, 8)}…${secondSecret.slice(-4)}`).waitFor();
  expect(await page.getByTestId('key-row').count()).toBe(1);
  await row.getByText(/previous secret works until/).waitFor();
  await capture(page, 'policy-05-rolled', problems);

  // Roll again at once: the second secret stops, the first keeps its hour, the third works.
  await page.getByRole('button', { name: 'Roll key support bot' }).click();
  await roll.waitFor();
  expect(await roll.getByLabel('At once (the key may have leaked)').isChecked()).toBe(true);
  await roll.getByRole('button', { name: 'Roll key' }).click();
  await page.getByText('The old secret has stopped working.').waitFor();
  const thirdSecret = await page.locator('#rolled-secret').inputValue();
  expect(thirdSecret).not.toBe(secondSecret);
  expect(await infer(secondSecret)).toBe(401);
  expect(await infer(thirdSecret)).toBe(200);

  // The playground links to the rules.
  await page.getByRole('navigation', { name: 'Portal' }).getByRole('link', { name: 'Playground', exact: true }).click();
  await page.getByRole('main').getByRole('link', { name: 'usage policy' }).click();
  await page.getByRole('heading', { level: 1, name: 'Usage policy' }).waitFor();
  await ctx.close();
});

test('no page problems or serious accessibility violations', () => {
  expect(problems).toEqual([]);
});
