import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import madge from 'madge';
import { isHttp, isUseCase, PURE_FILES } from '../../support/layers';

const root = join(__dirname, '../../..');
const src = join(root, 'src');

/**
 * No import cycle under src/: a cycle makes load order decide what is undefined at start-up.
 * `require()` calls count too (mixedImports), so a lazy require cannot hide one. Type-only imports
 * count as well: they vanish at runtime, but a cycle of types still ties two parts together (the
 * composition root's Services naming an area's type that names Services, say).
 */
describe('import graph of src/', () => {
  /** What runs: imports and requires. */
  let graph: Awaited<ReturnType<typeof madge>>;
  /** The same with type-only imports. */
  let typed: Awaited<ReturnType<typeof madge>>;
  const read = (skipTypeImports: boolean) =>
    madge(src, {
      fileExtensions: ['ts'],
      tsConfig: join(root, 'tsconfig.json'),
      detectiveOptions: { ts: { skipTypeImports, mixedImports: true } },
    });
  beforeAll(async () => {
    // The parser warns (DeprecationWarning) once per `import('…')` type it walks: not ours to fix.
    const warn = jest.spyOn(process, 'emitWarning').mockImplementation(() => undefined);
    try {
      [graph, typed] = await Promise.all([read(true), read(false)]);
    } finally {
      warn.mockRestore();
    }
  }, 90_000);

  it('is read whole, lazy requires and the use-case layer included', () => {
    const deps = graph.obj();
    expect(Object.keys(deps).length).toBeGreaterThan(100);
    expect(deps['main.ts']).toContain('load-modules.ts');
    // The lazy require('./modules'): if this edge vanished, a cycle through it could not be seen.
    expect(deps['load-modules.ts']).toContain('modules.ts');
    // src/<area>/usecases is in the graph with its edges both ways, so a cycle through it is seen too.
    expect(deps['inference/module.ts']).toContain('inference/usecases/engine.ts');
    expect(deps['inference/usecases/engine.ts']).toContain('platform/errors.ts');
  });

  it('has no cycle, not even one of types', () => {
    // A type-only edge is in the typed graph and not in the runtime one: the typed graph really has them.
    expect(typed.obj()['main.ts']).toContain('services.ts');
    expect(graph.obj()['main.ts']).not.toContain('services.ts');
    expect(graph.circular()).toEqual([]);
    expect(typed.circular()).toEqual([]);
  });

  /** Every file a module loads at runtime, itself included. */
  const closure = (from: string): Set<string> => {
    const deps = graph.obj();
    const seen = new Set<string>();
    const todo = [from];
    while (todo.length) {
      const f = todo.pop()!;
      if (seen.has(f)) continue;
      seen.add(f);
      todo.push(...(deps[f] ?? []));
    }
    return seen;
  };

  it('loads nothing of the HTTP side, nor the composition root, from the pure files or the use cases', () => {
    const inner = Object.keys(graph.obj()).filter((f) => PURE_FILES.includes(f) || isUseCase(f));
    expect(inner.length).toBeGreaterThan(20);
    const bad = inner.flatMap((f) => [...closure(f)].filter((d) => isHttp(d) || /^(main|modules|load-modules|services)\.ts$/.test(d)).map((d) => `${f} → ${d}`));
    expect(bad).toEqual([]);
  });
});

/**
 * The layers (docs/ARCHITECTURE.md): the decision files are pure and the use cases know nothing of HTTP.
 * Type-only imports count here: a use case that names an api type still depends on the api.
 */
describe('layers of the pure files and the use cases', () => {
  let deps: Record<string, string[]>;
  beforeAll(async () => {
    // The parser warns (DeprecationWarning) once per `import('…')` type it walks: not ours to fix.
    const warn = jest.spyOn(process, 'emitWarning').mockImplementation(() => undefined);
    try {
      const entries = [...PURE_FILES.map((f) => join(src, f)), ...['accounts', 'billing', 'inference', 'policy'].map((a) => join(src, a, 'usecases'))];
      const g = await madge(entries.filter((p) => existsSync(p)), {
        baseDir: src,
        fileExtensions: ['ts'],
        tsConfig: join(root, 'tsconfig.json'),
        detectiveOptions: { ts: { skipTypeImports: false, mixedImports: true } },
      });
      deps = g.obj();
    } finally {
      warn.mockRestore();
    }
  }, 60_000);

  const importsOf = (keep: (f: string) => boolean) =>
    Object.entries(deps)
      .filter(([f]) => keep(f))
      .flatMap(([f, ds]) => ds.map((d) => [f, d] as const));
  const isPure = (f: string) => PURE_FILES.includes(f);

  it('the pure files and the use cases never import the HTTP side', () => {
    const imports = [...importsOf(isPure), ...importsOf(isUseCase)];
    expect(imports.length).toBeGreaterThan(20);
    expect(imports.filter(([, d]) => isHttp(d)).map(([f, d]) => `${f} → ${d}`)).toEqual([]);
  });

  it('the use cases use the ports, not an adapter (no demo model, no upstream client)', () => {
    expect(importsOf(isUseCase).filter(([, d]) => /^inference\/(demo|openai)\//.test(d)).map(([f, d]) => `${f} → ${d}`)).toEqual([]);
  });

  it('the pure files and the use cases never import express', () => {
    const files = Object.keys(deps).filter((f) => isPure(f) || isUseCase(f));
    const express = files.filter((f) => /(?:from\s+|require\(\s*|import\(\s*)['"]express(?:\/[^'"]*)?['"]/.test(readFileSync(join(src, f), 'utf8')));
    expect(express).toEqual([]);
  });
});
