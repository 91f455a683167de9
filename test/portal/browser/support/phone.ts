import type { Browser, BrowserContext, Page } from 'playwright-core';

// The page's globals, for functions passed to page.evaluate (no DOM lib in the project's tsconfig).
declare const window: any;
declare const document: any;

/** The phone the walk used: 390×844 CSS pixels, touch, a phone's user agent. */
export const PHONE = { width: 390, height: 844 };

export function newPhoneContext(browser: Browser, baseURL: string): Promise<BrowserContext> {
  return browser.newContext({ baseURL, viewport: PHONE, deviceScaleFactor: 1, isMobile: true, hasTouch: true });
}

/** How much wider than the screen the page is (0 when it fits). */
export async function horizontalOverflow(page: Page): Promise<{ scrollWidth: number; viewport: number }> {
  return page.evaluate(() => ({ scrollWidth: document.documentElement.scrollWidth as number, viewport: window.innerWidth as number }));
}

/**
 * Every visible control on the page (links, buttons, inputs, selects, summaries), scrolled into
 * view one by one: it must lie inside the screen's width, and the point at its centre must hit it
 * (or its label) — not a form, a header or anything else laid over it. Returns the misses as lines.
 */
export async function untappableControls(page: Page): Promise<string[]> {
  return page.evaluate(() => {
    const misses: string[] = [];
    const controls = document.querySelectorAll('a[href], button, input:not([type="hidden"]), select, textarea, summary');
    const name = (el: any) =>
      `${el.tagName.toLowerCase()} “${(el.getAttribute('aria-label') || el.innerText || el.value || el.name || el.id || '').trim().slice(0, 40)}”`;
    for (const el of controls) {
      if (el.classList.contains('skip-link') || el.closest('dialog:not([open])')) continue;
      const style = window.getComputedStyle(el);
      let r = el.getBoundingClientRect();
      if (r.width === 0 || r.height === 0 || style.visibility === 'hidden') continue; // not shown
      el.scrollIntoView({ block: 'center', inline: 'nearest' });
      r = el.getBoundingClientRect();
      if (r.left < -0.5 || r.right > window.innerWidth + 0.5) {
        misses.push(`${name(el)} lies off-screen (x ${Math.round(r.left)}–${Math.round(r.right)} of ${window.innerWidth})`);
        continue;
      }
      const hit = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
      const labels = el.labels ? [...el.labels] : [];
      if (!hit || !(hit === el || el.contains(hit) || labels.some((l: any) => l.contains(hit)))) {
        misses.push(`${name(el)}: a tap at its centre lands on ${hit ? `${hit.tagName.toLowerCase()}.${hit.className}` : 'nothing'}`);
      }
    }
    window.scrollTo(0, 0);
    return misses;
  });
}

/** The header's height in CSS pixels. */
export async function headerHeight(page: Page): Promise<number> {
  return page.evaluate(() => Math.round(document.querySelector('header')!.getBoundingClientRect().height));
}

/** Opens the phone menu and taps a page's link in it. */
export async function tapNav(page: Page, label: string, heading: string | RegExp): Promise<void> {
  await page.getByRole('button', { name: 'Menu' }).tap();
  await page.getByRole('navigation', { name: 'Portal' }).getByRole('link', { name: label, exact: true }).tap();
  await page.getByRole('heading', { level: 1, name: heading }).waitFor();
}
