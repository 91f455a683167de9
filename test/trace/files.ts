import { readFileSync } from 'node:fs';
import { dirname, relative, sep } from 'node:path';
import ts from 'typescript';

/**
 * True for a file with no code of its own: only imports, re-exports and type declarations (a barrel
 * `index.ts`, a file of types). Such a file's re-export getters run whenever an import goes through
 * it, so coverage sees it "run"; the rule leaves it out by its content, whatever its name.
 */
export function hasNoCodeOfItsOwn(file: string): boolean {
  const sf = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, false, ts.ScriptKind.TS);
  return sf.statements.every(
    (st) =>
      ts.isImportDeclaration(st) ||
      ts.isExportDeclaration(st) ||
      ts.isInterfaceDeclaration(st) ||
      ts.isTypeAliasDeclaration(st) ||
      (ts.isModuleDeclaration(st) && !!st.modifiers?.some((m) => m.kind === ts.SyntaxKind.DeclareKeyword)),
  );
}

export interface Grouped {
  folder: string;
  files: string[];
}

/** `src`-relative paths grouped by folder, folders and files sorted. */
export function groupByFolder(srcDir: string, files: string[]): Grouped[] {
  const by = new Map<string, string[]>();
  for (const f of files) {
    const rel = relative(srcDir, f).split(sep).join('/');
    const folder = dirname(rel) === '.' ? 'src' : `src/${dirname(rel)}`;
    by.set(folder, [...(by.get(folder) ?? []), rel.slice(rel.lastIndexOf('/') + 1)]);
  }
  return [...by.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([folder, fs]) => ({ folder, files: fs.sort() }));
}
