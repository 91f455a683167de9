import type { Browser } from 'playwright-core';
import { startTestServer, TestServer } from '../../support/harness';
import { launchChromium } from './support/browser';

/** /docs in a real browser: Swagger UI runs under the page's CSP and nosniff, loads nothing from another origin, and lists the operations. */

let server: TestServer;
let browser: Browser;
beforeAll(async () => {
  server = await startTestServer();
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
  await server?.close();
});

test('the reference page renders every operation of /openapi.json with no console error and no other origin', async () => {
  const page = await browser.newPage();
  const problems: string[] = [];
  const elsewhere: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error' || m.type() === 'warning') problems.push(m.text());
  });
  page.on('pageerror', (e) => problems.push(e.message));
  page.on('request', (r) => {
    if (!r.url().startsWith(server.url) && !r.url().startsWith('data:')) elsewhere.push(r.url());
  });
  await page.goto(`${server.url}/docs`);
  expect(page.url()).toBe(`${server.url}/docs/`);
  await page.waitForSelector('.opblock');
  const doc = (await (await fetch(`${server.url}/openapi.json`)).json()) as { paths: Record<string, Record<string, { tags?: string[] }>> };
  // Swagger UI shows an operation once under each of its tags.
  const shown = Object.values(doc.paths).flatMap((item) =>
    Object.entries(item)
      .filter(([k]) => k !== 'servers')
      .map(([, op]) => op.tags?.length ?? 1),
  );
  expect(await page.locator('.opblock').count()).toBe(shown.reduce((a, b) => a + b, 0));
  await expect(page.locator('.title').first().innerText()).resolves.toMatch(/^tollgate/);
  expect(problems).toEqual([]);
  expect(elsewhere).toEqual([]);
});
