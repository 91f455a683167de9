// The module object itself (an ES namespace import would be a read-only view of it).
// eslint-disable-next-line @typescript-eslint/no-require-imports
const fs = require('node:fs') as typeof import('node:fs');
import { resolve } from 'node:path';
import { PLANTED, type Planted } from './bugs';

/**
 * Plants one bug of ./bugs.ts into the code under simulation, for this process only: the source
 * (TypeScript or Lua) of the bug's file is read with its patch applied, as the loaders (tsx for
 * TypeScript, luaSource for Lua) read it through fs.readFileSync. Nothing on disk changes and no
 * production code reads a switch: the patched text exists only in a process the simulator started
 * with `--plant NAME`. Must run before the patched file is first loaded (main.ts imports this first).
 */

const SRC = resolve(__dirname, '../../../src');

export let planted: Planted | null = null;
let applied = 0;

/** Throws if the bug's patch no longer matches its file exactly once (the code moved under it). */
export function patched(bug: Planted, text: string): string {
  const parts = text.split(bug.find);
  if (parts.length !== 2)
    throw new Error(
      `planted bug ${bug.name}: its patch matches ${parts.length - 1} times in src/${bug.file} (it must match once); update test/sim/planted/bugs.ts`,
    );
  return parts[0] + bug.replace + parts[1];
}

export function plant(name: string): void {
  const bug = PLANTED.find((b) => b.name === name);
  if (!bug) throw new Error(`no planted bug named ${name} (known: ${PLANTED.map((b) => b.name).join(', ')})`);
  planted = bug;
  const target = resolve(SRC, bug.file);
  const real = fs.readFileSync;
  fs.readFileSync = function (this: unknown, path: unknown, ...rest: unknown[]) {
    const out = (real as (...a: unknown[]) => unknown).call(this, path, ...rest);
    if (typeof path === 'string' && resolve(path) === target) {
      applied++;
      const text = typeof out === 'string' ? out : (out as Buffer).toString('utf8');
      const changed = patched(bug, text);
      return typeof out === 'string' ? changed : Buffer.from(changed);
    }
    return out;
  } as typeof fs.readFileSync;
}

/** Whether the planted bug's file was read (and so patched) in this process. */
export function plantApplied(): boolean {
  return applied > 0;
}

const i = process.argv.indexOf('--plant');
if (i >= 0) plant(process.argv[i + 1]);
