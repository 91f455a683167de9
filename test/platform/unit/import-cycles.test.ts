import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { compilerOptionsOf, cycles, ImportGraph, runtimeImportGraph, typedImportGraph } from '../../support/import-graph';
import { isHttp, isUseCase, PURE_FILES } from '../../support/layers';

const root = join(__dirname, '../../..');
const src = join(root, 'src');

/**
 * No import cycle under src/: a cycle makes load order decide what is undefined at start-up.
 * `require()` calls count too, so a lazy require cannot hide one. Type-only imports count as well:
 * they vanish at runtime, but a cycle of types still ties two parts together (the composition
 * root's Services naming an area's type that names Services, say). The graphs come from esbuild
 * (what runs) and TypeScript's pre-processor (types too): test/support/import-graph.ts.
 */
describe('import graph of src/', () => {
  /** What runs: imports and requires. */
  let graph: ImportGraph;
  /** The same with type-only imports. */
  let typed: ImportGraph;
  beforeAll(async () => {
    graph = await runtimeImportGraph(src);
    typed = typedImportGraph(src, compilerOptionsOf(join(root, 'tsconfig.json')));
  });

  it('is read whole, lazy requires and the use-case layer included', () => {
    const deps = graph;
    expect(Object.keys(deps).length).toBeGreaterThan(100);
    // The lazy require('./modules'): if this edge vanished, a cycle through it could not be seen.
    expect(deps['main.ts']).toContain('modules.ts');
    // src/<area>/usecases is in the graph with its edges both ways, so a cycle through it is seen too.
    expect(deps['inference/module.ts']).toContain('inference/usecases/engine.ts');
    expect(deps['inference/usecases/engine.ts']).toContain('platform/errors.ts');
  });

  it('has no cycle, not even one of types', () => {
    // A type-only edge is in the typed graph and not in the runtime one: the typed graph really has them.
    expect(typed['init.ts']).toContain('services.ts');
    expect(graph['init.ts']).not.toContain('services.ts');
    expect(cycles(graph)).toEqual([]);
    expect(cycles(typed)).toEqual([]);
  });

  /** Every file a module loads at runtime, itself included. */
  const closure = (from: string): Set<string> => {
    const deps = graph;
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
    const inner = Object.keys(graph).filter((f) => PURE_FILES.includes(f) || isUseCase(f));
    expect(inner.length).toBeGreaterThan(20);
    const bad = inner.flatMap((f) =>
      [...closure(f)].filter((d) => isHttp(d) || /^(main|modules|services)\.ts$/.test(d)).map((d) => `${f} → ${d}`),
    );
    expect(bad).toEqual([]);
  });
});

/**
 * The layers (docs/ARCHITECTURE.md): the decision files are pure and the use cases know nothing of HTTP.
 * Type-only imports count here: a use case that names an api type still depends on the api.
 */
describe('layers of the pure files and the use cases', () => {
  let deps: Record<string, string[]>;
  beforeAll(() => {
    // Every file under src/ with its imports, types included; the checks below read the pure files' and the use cases'.
    deps = typedImportGraph(src, compilerOptionsOf(join(root, 'tsconfig.json')));
  });

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
    expect(
      importsOf(isUseCase)
        .filter(([, d]) => /^inference\/(demo|openai)\//.test(d))
        .map(([f, d]) => `${f} → ${d}`),
    ).toEqual([]);
  });

  it('the pure files and the use cases never import express', () => {
    const files = Object.keys(deps).filter((f) => isPure(f) || isUseCase(f));
    const express = files.filter((f) =>
      /(?:from\s+|require\(\s*|import\(\s*)['"]express(?:\/[^'"]*)?['"]/.test(readFileSync(join(src, f), 'utf8')),
    );
    expect(express).toEqual([]);
  });
});
