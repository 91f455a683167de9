import type { Browser, Page } from 'playwright-core';
import type { TestServer } from '../../support/harness';
import { until } from '../../support/wait';
import { Receiver } from '../../webhooks/e2e/receiver';
import { fund, signUpAndLogIn, type ApiClient } from './support/api';
import { capture, ensurePortalBuilt, launchChromium, startPortalServer, watchProblems } from './support/browser';

/**
 * The Webhooks page with real clicks: add an endpoint (secret shown once), set the low-balance
 * threshold, see an endpoint disabled by a failing receiver and enable it again, the deliveries with
 * their attempts, resend one, replay since a time, rotate the secret. The receiver verifies every
 * delivery with the standardwebhooks package.
 */
jest.setTimeout(180_000);

const ada = { name: 'Ada Hooks', email: `ada-hooks-${Date.now().toString(36)}@example.com`, password: 'correct horse battery' };
let server: TestServer;
let browser: Browser;
let page: Page;
let adaApi: ApiClient & { workspaceId: string };
let receiver: Receiver;
const problems: string[] = [];

beforeAll(async () => {
  ensurePortalBuilt();
  server = await startPortalServer({ WEBHOOKS_ALLOW_PRIVATE_TARGETS: 'true', WEBHOOKS_RETRY_BASE_MS: '20', WEBHOOKS_MAX_ATTEMPTS: '2' });
  adaApi = await signUpAndLogIn(server.url, ada);
  await fund(adaApi, adaApi.workspaceId);
  receiver = new Receiver(() => 500);
  await receiver.start();
  browser = await launchChromium();
  page = await (await browser.newContext({ baseURL: server.url, viewport: { width: 1280, height: 900 } })).newPage();
  watchProblems(page, 'ada', problems);
  await page.goto('/login');
  await page.getByLabel('E-mail').fill(ada.email);
  await page.getByLabel('Password').fill(ada.password);
  await page.getByRole('button', { name: 'Log in' }).click();
  await page.getByRole('navigation', { name: 'Portal' }).waitFor();
});
afterAll(async () => {
  await browser?.close();
  await receiver?.close();
  await server?.close();
});

const status = () => page.getByTestId('endpoint-status').textContent();
const createKey = (name: string) => adaApi.call('POST', `/v1/workspaces/${adaApi.workspaceId}/keys`, { name });

test('an admin adds an endpoint, sets the threshold, enables it again, resends and replays from the portal', async () => {
  await page.getByRole('navigation', { name: 'Portal' }).getByRole('link', { name: 'Workspace', exact: true }).click();
  await page.getByRole('main').getByRole('link', { name: 'Webhooks', exact: true }).click();
  await page.getByRole('heading', { level: 1, name: 'Webhooks' }).waitFor();

  await page.getByLabel('URL').fill(receiver.url);
  await page.getByRole('checkbox', { name: 'key.created' }).check();
  await page.getByRole('checkbox', { name: 'balance.below_threshold' }).check();
  await page.getByRole('button', { name: 'Add endpoint' }).click();
  const secret = (await page.getByTestId('webhook-secret').textContent())!;
  expect(secret).toMatch(/^whsec_/);
  receiver.secret = secret;

  await page.getByLabel('Threshold (USD)').fill('90');
  await page.getByRole('button', { name: 'Save threshold' }).click();
  await page.getByText('Alert when the balance falls below $90.').waitFor();
  const listed = await adaApi.call<{ balanceThreshold: string; endpoints: unknown[] }>(
    'GET',
    `/v1/workspaces/${adaApi.workspaceId}/webhooks`,
  );
  expect(listed.balanceThreshold).toBe('90');

  // The receiver fails every attempt: the endpoint ends disabled, and the page offers to enable it.
  await createKey('while failing');
  await until(() => receiver.received.length >= 2, 20_000, 'both failed attempts');
  await until(
    async () =>
      (await adaApi.call<{ endpoints: { status: string }[] }>('GET', `/v1/workspaces/${adaApi.workspaceId}/webhooks`)).endpoints[0]
        .status === 'disabled',
    20_000,
    'disabled',
  );
  await page.reload();
  await page.getByRole('button', { name: 'Enable again' }).waitFor();
  expect(await status()).toBe('disabled');
  await page.getByRole('button', { name: 'Enable again' }).click();
  await until(async () => (await status()) === 'enabled', 10_000, 'enabled on the page');

  receiver.answer = () => 204;
  await createKey('after enabling');
  await until(() => receiver.received.some((r) => r.answered === 204), 20_000, 'a delivery');
  await page.getByText('Deliveries', { exact: true }).click();
  await page.getByRole('button', { name: 'Refresh deliveries' }).click();
  await page.getByRole('cell', { name: 'succeeded' }).waitFor();
  // Styled like the other tables (the keys', the audit log's).
  const table = page.getByRole('table', { name: 'Deliveries, newest first' });
  expect(await table.getAttribute('class')).toContain('table');
  // Runs in the page: its getComputedStyle (no DOM lib in the project's tsconfig).
  expect(
    await table.evaluate(
      (t) => (globalThis as unknown as { getComputedStyle(e: unknown): { borderCollapse: string } }).getComputedStyle(t).borderCollapse,
    ),
  ).toBe('collapse');
  const before = receiver.received.length;
  await page.getByRole('row').filter({ hasText: 'succeeded' }).getByRole('button', { name: 'Resend' }).click();
  await page.getByText(/Resend of .* queued\./).waitFor();
  await until(() => receiver.received.length > before, 10_000, 'the resend');

  // Replay since ten minutes ago (UTC): both keys' events again, with their own webhook-ids.
  const since = new Date(Date.now() - 10 * 60_000).toISOString().slice(0, 16);
  await page.getByLabel('Send again every event since (UTC)').fill(since);
  const sent = receiver.received.length;
  await page.getByRole('button', { name: 'Replay since' }).click();
  await page.getByTestId('replay').waitFor();
  await until(
    async () => {
      await page.getByRole('button', { name: 'Refresh progress' }).click();
      return /2 events, 2 delivered/.test((await page.getByTestId('replay').textContent()) ?? '');
    },
    20_000,
    'the replay to deliver both events',
  );
  expect(receiver.received.length - sent).toBe(2);
  expect(receiver.received.every((r) => r.verified)).toBe(true);
  await capture(page, 'webhooks', problems);

  // Rotating asks first, as deleting a key does: Cancel changes nothing.
  const head = await server.services.store.headPosition();
  await page.getByRole('button', { name: 'Rotate secret' }).click();
  const confirmRotate = page.getByRole('dialog', { name: 'Rotate the signing secret?' });
  await confirmRotate.waitFor();
  await confirmRotate.getByRole('button', { name: 'Cancel' }).click();
  await confirmRotate.waitFor({ state: 'hidden' });
  expect(await server.services.store.headPosition()).toBe(head);
  // The secret shown at creation went with the reload; a rotation shows the new one, once.
  await page.getByRole('button', { name: 'Rotate secret' }).click();
  await confirmRotate.getByRole('button', { name: 'Rotate secret' }).click();
  const rotated = (await page.getByTestId('webhook-secret').textContent())!;
  expect(rotated).toMatch(/^whsec_/);
  expect(rotated).not.toBe(secret);
  await page.getByRole('button', { name: 'I have saved it' }).click();
  await page.getByTestId('webhook-secret').waitFor({ state: 'detached' });

  // Deleting asks too; confirmed, the endpoint is gone.
  await page.getByRole('button', { name: 'Delete endpoint' }).click();
  const confirmDelete = page.getByRole('dialog', { name: 'Delete this endpoint?' });
  await confirmDelete.getByRole('button', { name: 'Cancel' }).click();
  await confirmDelete.waitFor({ state: 'hidden' });
  expect((await adaApi.call<{ endpoints: unknown[] }>('GET', `/v1/workspaces/${adaApi.workspaceId}/webhooks`)).endpoints).toHaveLength(1);
  await page.getByRole('button', { name: 'Delete endpoint' }).click();
  await confirmDelete.getByRole('button', { name: 'Delete endpoint' }).click();
  await page.getByText('No endpoints yet.').waitFor();
  expect((await adaApi.call<{ endpoints: unknown[] }>('GET', `/v1/workspaces/${adaApi.workspaceId}/webhooks`)).endpoints).toEqual([]);
  expect(problems).toEqual([]);
});
