import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import * as esbuild from 'esbuild';
import ts from 'typescript';

/** File → the files it imports, both relative to the graph's root (`main.ts`, `platform/errors.ts`). */
export type ImportGraph = Record<string, string[]>;

const toKey = (root: string, file: string) => relative(root, file).split('\\').join('/');

function tsFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((d) =>
    d.isDirectory() ? tsFiles(join(dir, d.name)) : d.name.endsWith('.ts') && !d.name.endsWith('.d.ts') ? [join(dir, d.name)] : [],
  );
}

/**
 * What runs: esbuild bundles every file under `root` (packages left out) and its metafile lists each
 * file's kept imports: static imports, `require()` calls (lazy ones included) and `import()`. Like
 * tsc, esbuild drops type-only imports and imports used only as types, so an edge here is one the
 * built code loads. (madge read the same graph in about 15 s of CPU; this takes well under one.)
 */
export async function runtimeImportGraph(root: string): Promise<ImportGraph> {
  const cwd = process.cwd();
  const { metafile } = await esbuild.build({
    entryPoints: tsFiles(root),
    absWorkingDir: cwd,
    bundle: true,
    write: false,
    metafile: true,
    outdir: join(root, '.import-graph'),
    platform: 'node',
    format: 'cjs',
    packages: 'external',
    logLevel: 'silent',
  });
  const graph: ImportGraph = {};
  for (const [input, meta] of Object.entries(metafile.inputs)) {
    const file = join(cwd, input);
    if (!file.startsWith(root + '/') || !file.endsWith('.ts')) continue;
    graph[toKey(root, file)] = [
      ...new Set(meta.imports.filter((i) => !i.external && i.path.endsWith('.ts')).map((i) => toKey(root, join(cwd, i.path)))),
    ];
  }
  return graph;
}

/**
 * Every reference between the files under `root`, types included: `import type`, imports used only
 * as types, `typeof import('…')`, re-exports, `require()` and `import()`, read with TypeScript's own
 * pre-processor and resolved with the project's compiler options.
 */
export function typedImportGraph(root: string, options: ts.CompilerOptions): ImportGraph {
  const graph: ImportGraph = {};
  for (const file of tsFiles(root)) {
    const { importedFiles } = ts.preProcessFile(readFileSync(file, 'utf8'), true, true);
    const deps = new Set<string>();
    for (const { fileName } of importedFiles) {
      const resolved = ts.resolveModuleName(fileName, file, options, ts.sys).resolvedModule;
      if (!resolved || resolved.isExternalLibraryImport) continue;
      const target = resolved.resolvedFileName;
      if (target.startsWith(root + '/') && target.endsWith('.ts') && !target.endsWith('.d.ts')) deps.add(toKey(root, target));
    }
    graph[toKey(root, file)] = [...deps];
  }
  return graph;
}

/** The compiler options of a tsconfig file. */
export function compilerOptionsOf(tsconfig: string): ts.CompilerOptions {
  const { config } = ts.readConfigFile(tsconfig, ts.sys.readFile);
  return ts.parseJsonConfigFileContent(config, ts.sys, join(tsconfig, '..')).options;
}

/** Every cycle's files, each cycle once (as madge's circular() listed them): [] when there is none. */
export function cycles(graph: ImportGraph): string[][] {
  const found: string[][] = [];
  const seen = new Set<string>();
  const state = new Map<string, 'open' | 'done'>();
  const stack: string[] = [];
  const visit = (f: string) => {
    state.set(f, 'open');
    stack.push(f);
    for (const d of graph[f] ?? []) {
      if (state.get(d) === 'open') {
        const cycle = stack.slice(stack.indexOf(d));
        const key = [...cycle].sort().join('\n');
        if (!seen.has(key)) {
          seen.add(key);
          found.push(cycle);
        }
      } else if (!state.has(d)) visit(d);
    }
    stack.pop();
    state.set(f, 'done');
  };
  for (const f of Object.keys(graph).sort()) if (!state.has(f)) visit(f);
  return found;
}
