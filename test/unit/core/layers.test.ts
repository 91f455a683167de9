import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

const src = join(__dirname, '../../../src');

/** Every module a file under `dir` imports (type-only imports too: a layer does not even name what it must not know), relative to src/. */
function importsUnder(dir: string): { file: string; target: string }[] {
  const out: { file: string; target: string }[] = [];
  const walk = (d: string) => {
    for (const entry of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, entry.name);
      if (entry.isDirectory()) walk(p);
      else if (p.endsWith('.ts')) {
        const text = readFileSync(p, 'utf8');
        for (const m of text.matchAll(/(?:from|import|require\()\s*'([^']+)'/g)) {
          const spec = m[1];
          const target = spec.startsWith('.') ? relative(src, resolve(dirname(p), spec)) : spec;
          out.push({ file: relative(src, p), target });
        }
      }
    }
  };
  walk(join(src, dir));
  return out;
}

describe('layers', () => {
  test('the domain imports nothing but the domain and node built-ins (no store, no clock, no HTTP)', () => {
    const bad = importsUnder('domain').filter(({ target }) => !target.startsWith('domain/') && !target.startsWith('node:'));
    expect(bad).toEqual([]);
  });

  test('the use cases know nothing of HTTP: no import of src/api or express', () => {
    const all = importsUnder('usecases');
    expect(all.length).toBeGreaterThan(10);
    const bad = all.filter(({ target }) => target.startsWith('api/') || target === 'express' || target.startsWith('express/'));
    expect(bad).toEqual([]);
  });
});
