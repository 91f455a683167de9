/** What the HTTP benches (gateway, peer) share: options, percentiles, time to first chunk, the doc section. */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { cpuTimeMs, isRunnable } from './slow-stream';

/** `--name <number>` from the command line, or `def`. */
export function numberArg(name: string, def: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : def;
}

export const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];

/** Time from sending a streaming request to its first `data:` chunk, `n` requests one after another (ms, sorted). */
export async function timeToFirstChunk(
  url: string,
  headers: Record<string, string>,
  body: (i: number) => string,
  n: number,
): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: body(i) });
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    const decoder = new TextDecoder();
    let seen = '';
    while (!seen.includes('data: ')) {
      const { value, done } = await reader.read();
      if (done) throw new Error(`${url}: no chunk (HTTP ${res.status})`);
      seen += decoder.decode(value, { stream: true });
    }
    out.push(performance.now() - t0);
    while (!(await reader.read()).done);
  }
  return out.sort((a, b) => a - b);
}

/** Replaces the `## <heading>` section of docs/BENCHMARKS.md (up to the next `## `) with `section`. */
export function replaceDocSection(heading: string, section: string): void {
  const file = join(__dirname, '../../docs/BENCHMARKS.md');
  const existing = existsSync(file) ? readFileSync(file, 'utf8') : '# Benchmarks\n';
  const start = existing.search(new RegExp(`^## ${heading}\\s*$`, 'm'));
  const head = start >= 0 ? existing.slice(0, start) : existing.trimEnd() + '\n\n';
  const rest = start >= 0 ? existing.slice(start + 1) : '';
  const next = rest.search(/^## /m);
  const tail = next >= 0 ? rest.slice(next) : '';
  writeFileSync(file, head + `## ${heading}\n\n${section}` + (tail ? `\n${tail}` : ''));
}

export interface IdleOptions {
  /** Length of one window, ms. */
  windowMs?: number;
  /** Most CPU (user + system, all threads) the process may use in a window to count as idle, percent of one core. */
  maxPercent?: number;
  /** Consecutive idle windows needed. */
  windows?: number;
  /** Gives up (and returns) after this long, ms. */
  timeoutMs?: number;
}

/**
 * Waits until process `pid` is idle: at most `maxPercent` of a core in each of `windows` consecutive
 * windows. A 1-connection phase measured right after a load phase would otherwise measure the
 * target finishing that load's work (tollgate's in-process projector catching up on the events of
 * thousands of requests), not one request at a time. Returns the ms waited (`timeoutMs` or more if
 * the process never went idle).
 */
export async function waitForIdle(pid: number, opts: IdleOptions = {}): Promise<number> {
  const { windowMs = 1000, maxPercent = 8, windows = 2, timeoutMs = 120_000 } = opts;
  const start = performance.now();
  let idle = 0;
  let last = cpuTimeMs(pid);
  while (idle < windows && performance.now() - start < timeoutMs) {
    await new Promise((r) => setTimeout(r, windowMs));
    const now = cpuTimeMs(pid);
    // A busy process starved of CPU on a loaded machine uses little of it but is still runnable
    // (state R): only a low share while it sleeps counts as idle.
    idle = ((now - last) / windowMs) * 100 <= maxPercent && !isRunnable(pid) ? idle + 1 : 0;
    last = now;
  }
  return performance.now() - start;
}
