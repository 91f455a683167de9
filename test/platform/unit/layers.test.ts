import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { isHttp, isUseCase, PURE_FILES } from '../../support/layers';

const src = join(__dirname, '../../../src');

/** Every module a file under src/ imports (type-only imports too: a layer does not even name what it must not know), relative to src/. */
function importsOf(keep: (file: string) => boolean): { file: string; target: string }[] {
  const out: { file: string; target: string }[] = [];
  const walk = (d: string) => {
    for (const entry of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, entry.name);
      if (entry.isDirectory()) walk(p);
      else if (p.endsWith('.ts') && keep(relative(src, p))) {
        const text = readFileSync(p, 'utf8');
        for (const m of text.matchAll(/(?:from|import|require\()\s*'([^']+)'/g)) {
          const spec = m[1];
          const target = spec.startsWith('.') ? relative(src, resolve(dirname(p), spec)) + '.ts' : spec;
          out.push({ file: relative(src, p), target });
        }
      }
    }
  };
  walk(src);
  return out;
}

describe('layers', () => {
  test('the pure decision files import nothing but pure files and node built-ins (no store, no clock, no HTTP)', () => {
    const all = importsOf((f) => PURE_FILES.includes(f));
    expect(all.length).toBeGreaterThan(10);
    const bad = all.filter(({ target }) => !PURE_FILES.includes(target) && !target.startsWith('node:'));
    expect(bad).toEqual([]);
  });

  test('the use cases know nothing of HTTP: no import of routes, the HTTP kit or express', () => {
    const all = importsOf(isUseCase);
    expect(all.length).toBeGreaterThan(10);
    const bad = all.filter(({ target }) => isHttp(target) || target === 'express' || target.startsWith('express/'));
    expect(bad).toEqual([]);
  });
});
