import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser, type Locator, type Page } from 'playwright-core';
import { startTestServer, type TestServer } from '../../../support/harness';

// The page's globals, for functions passed to page.evaluate (no DOM lib in the project's tsconfig).
declare const window: any;
declare const document: unknown;

export const ROOT = join(__dirname, '..', '..', '..', '..');
export const SCREENSHOTS = join(ROOT, 'test-results', 'screenshots');

/** The newest modification time under a folder (the portal's sources are a few dozen files). */
function newestMtime(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestMtime(path) : statSync(path).mtimeMs);
  }
  return newest;
}

/**
 * The browser tests drive the built portal (dist/portal), as `npm start` serves it. `npm ci` and
 * `npm install` build it (prepare → build); when it is missing, or older than its sources, it is
 * built here — once, under a lock, when several test files start together.
 */
export function ensurePortalBuilt(): void {
  const index = join(ROOT, 'dist', 'portal', 'index.html');
  const fresh = () => existsSync(index) && statSync(index).mtimeMs >= newestMtime(join(ROOT, 'portal'));
  if (fresh()) return;
  const lock = join(ROOT, 'dist', '.portal-build.lock');
  mkdirSync(join(ROOT, 'dist'), { recursive: true });
  const deadline = Date.now() + 180_000;
  for (;;) {
    try {
      mkdirSync(lock);
      break;
    } catch {
      if (fresh()) return; // another test file built it
      if (Date.now() > deadline) throw new Error(`waited 180 s for ${lock}: remove it if no build is running`);
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 200);
    }
  }
  try {
    if (!fresh()) execFileSync('npm', ['run', 'build:portal'], { cwd: ROOT, stdio: 'inherit' });
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
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
export function watchProblems(page: Page, label: string, problems: string[], expectedStatuses: number[] = []): void {
  const expected = new RegExp(
    `Failed to load resource: the server responded with a status of (${[401, 402, 404, ...expectedStatuses].join('|')})`,
  );
  page.on('pageerror', (err) => problems.push(`${label}: page error: ${err.message}`));
  page.on('console', (msg) => {
    if (msg.type() !== 'error') return;
    const text = msg.text();
    // Expected answers the walk provokes on purpose show up as failed loads; those are not bugs.
    if (expected.test(text)) return;
    problems.push(`${label}: console error: ${text}`);
  });
}

let axeSource: string | null = null;

/**
 * Runs axe-core (WCAG 2.1 A and AA rules) on the page as it is, and returns the serious and critical
 * violations as lines. It is evaluated through the DevTools protocol, so the page's strict CSP
 * stays on and is not loosened for the test.
 */
export async function accessibilityViolations(page: Page): Promise<string[]> {
  axeSource ??= readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');
  const loaded = await page.evaluate(() => typeof (window as unknown as { axe?: unknown }).axe !== 'undefined');
  if (!loaded) await page.evaluate(`${axeSource}\n;0`);
  const violations = await page.evaluate(async () => {
    const axe = (
      window as {
        axe: {
          run(
            ctx: unknown,
            opts: unknown,
          ): Promise<{ violations: { id: string; impact: string | null; help: string; nodes: { target: string[] }[] }[] }>;
        };
      }
    ).axe;
    const r = await axe.run(document, {
      runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'] },
      resultTypes: ['violations'],
    });
    return r.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, targets: v.nodes.map((n) => n.target.join(' ')) }));
  });
  return violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.id} (${v.impact}): ${v.help} — ${v.targets.slice(0, 3).join(', ')}`);
}

/** A screenshot of the page, and its accessibility check: violations go into `problems`. */
export async function capture(page: Page, name: string, problems: string[], alsoTo?: string): Promise<void> {
  await screenshot(page, name, alsoTo);
  for (const v of await accessibilityViolations(page)) problems.push(`${name}: ${v}`);
}

/** Waits until an input's value is `expected` (playwright-core has no auto-retrying expect). */
export async function waitForValue(locator: Locator, expected: string, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = '';
  while (Date.now() < deadline) {
    last = await locator.inputValue();
    if (last === expected) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`expected the value ${JSON.stringify(expected)}, still ${JSON.stringify(last)} after ${timeoutMs} ms`);
}

/** The service as `npm start` runs it (every module of src/modules.ts), on a free port. */
export function startPortalServer(overrides: Record<string, string> = {}): Promise<TestServer> {
  return startTestServer(overrides);
}

/** The text of a file the page downloaded. */
export async function readDownload(download: { createReadStream(): Promise<NodeJS.ReadableStream> }): Promise<string> {
  const stream = await download.createReadStream();
  let out = '';
  for await (const chunk of stream) out += chunk.toString();
  return out;
}
