import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';

export const ROOT = join(__dirname, '..', '..', '..');
export const SCREENSHOTS = join(ROOT, 'test-results', 'screenshots');

/**
 * The browser tests drive the built portal (dist/portal), as `npm start` serves it. `npm ci` and
 * `npm install` build it (prepare → build); when it is missing, it is built here once.
 */
export function ensurePortalBuilt(): void {
  if (existsSync(join(ROOT, 'dist', 'portal', 'index.html'))) return;
  execFileSync('npm', ['run', 'build:portal'], { cwd: ROOT, stdio: 'inherit' });
}

/** Debian's chromium (installed by .ci/run), or CHROMIUM_PATH. */
export function chromiumPath(): string {
  const candidates = [process.env.CHROMIUM_PATH, '/usr/bin/chromium', '/usr/bin/chromium-browser'].filter(Boolean) as string[];
  const found = candidates.find((p) => existsSync(p));
  if (!found) throw new Error('Chromium is not installed: apt-get install -y chromium (bash .ci/run does it), or set CHROMIUM_PATH');
  return found;
}

export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: chromiumPath(),
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--disable-dev-shm-usage',
    ],
  });
}

/** Saves a full-page screenshot to test-results/screenshots/<name>.png (and to `alsoTo`, if given). */
export async function screenshot(page: Page, name: string, alsoTo?: string): Promise<void> {
  mkdirSync(SCREENSHOTS, { recursive: true });
  const file = join(SCREENSHOTS, `${name}.png`);
  await page.screenshot({ path: file, fullPage: true });
  if (alsoTo) await page.screenshot({ path: alsoTo, fullPage: true });
}

/**
 * Collects what the page reports as broken: uncaught errors, console errors and Content-Security-
 * Policy violations. A test asserts the list is empty at the end.
 */
export function watchProblems(page: Page, label: string, problems: string[]): void {
  page.on('pageerror', (err) => problems.push(`${label}: page error: ${err.message}`));
  page.on('console', (msg) => {
    if (msg.type() !== 'error') return;
    const text = msg.text();
    // Expected answers the walk provokes on purpose show up as failed loads; those are not bugs.
    if (/Failed to load resource: the server responded with a status of (401|402|404)/.test(text)) return;
    problems.push(`${label}: console error: ${text}`);
  });
}
