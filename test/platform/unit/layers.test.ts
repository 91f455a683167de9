import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { isHttp, isUseCase, PURE_FILES } from '../../support/layers';

const src = join(__dirname, '../../../src');

/** Every module a file under src/ imports (type-only imports too: a layer does not even name what it must not know), relative to src/. */
function importsOf(keep: (file: string) => boolean): { file: string; target: string; typeOnly: boolean }[] {
  const out: { file: string; target: string; typeOnly: boolean }[] = [];
  const walk = (d: string) => {
    for (const entry of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, entry.name);
      if (entry.isDirectory()) walk(p);
      else if (p.endsWith('.ts') && keep(relative(src, p))) {
        const text = readFileSync(p, 'utf8');
        for (const m of text.matchAll(/(?:from|import|require\()\s*'([^']+)'/g)) {
          const spec = m[1];
          const resolved = spec.startsWith('.') ? relative(src, resolve(dirname(p), spec)) : spec;
          // `'../accounts'` is the folder's index.ts.
          const target = !spec.startsWith('.') ? spec : existsSync(join(src, resolved + '.ts')) ? resolved + '.ts' : `${resolved}/index.ts`;
          // The statement this specifier ends: `import type {…} from '…'` names types only.
          const statement = text.slice(text.lastIndexOf('import', m.index! + 6), m.index! + m[0].length);
          out.push({ file: relative(src, p), target, typeOnly: /^import\s+type\s/.test(statement) });
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

const AREAS = ['accounts', 'billing', 'inference', 'webhooks'];
const areaOf = (f: string) => AREAS.find((a) => f.startsWith(`${a}/`));
/**
 * An area's public surface: its index.ts (nothing of HTTP, so a use case may import it), its
 * routes/index.ts (the route kit other areas' routes build on) and its events.ts (the event shapes,
 * a contract every projection reads).
 */
const isPublic = (target: string) => /^[a-z]+\/(index|routes\/index|events)\.ts$/.test(target);
/** The composition root wires the areas' adapters and modules together: it may reach inside. */
const COMPOSITION_ROOT = ['main.ts', 'init.ts', 'services.ts', 'modules.ts'];
/** What reaches another area's internals, for a file outside the composition root. */
const internalImports = (keep: (f: string) => boolean) =>
  importsOf((f) => keep(f) && !COMPOSITION_ROOT.includes(f))
    .filter(({ file, target }) => areaOf(target) && areaOf(target) !== areaOf(file) && !isPublic(target))
    // The OpenAPI document is built from the route contracts themselves.
    .filter(({ file, target }) => !(file.startsWith('openapi/') && /\/routes\/[a-z-]*schemas\.ts$/.test(target)))
    .map(({ file, target }) => `${file} → ${target}`);

describe('areas', () => {
  test('an area uses another only through its index.ts, routes/index.ts or events.ts', () => {
    const crossing = importsOf((f) => areaOf(f) !== undefined).filter(
      ({ file, target }) => areaOf(target) && areaOf(target) !== areaOf(file),
    );
    expect(crossing.length).toBeGreaterThan(10);
    expect(internalImports((f) => areaOf(f) !== undefined)).toEqual([]);
  });

  test('admin, portal, openapi and the CLI use the areas only through their public files', () => {
    expect(internalImports((f) => /^(admin|portal|openapi|cli)\//.test(f))).toEqual([]);
  });

  test('the platform imports nothing from any area', () => {
    const all = importsOf((f) => f.startsWith('platform/'));
    expect(all.length).toBeGreaterThan(50);
    expect(
      all
        .filter(({ target }) => areaOf(target) !== undefined || /^(services|main|init|modules)\.ts$/.test(target))
        .map(({ file, target }) => `${file} → ${target}`),
    ).toEqual([]);
  });
});
