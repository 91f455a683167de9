import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';

/**
 * docs/ARCHITECTURE.md ("Writes") names every writer that appends without handleCommand, and why.
 * This keeps that list true: a new direct `.append(` outside the event store fails here until it
 * is routed through handleCommand or the doc names it too.
 */
const root = join(__dirname, '../../..');

function files(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((d) =>
    d.isDirectory() ? files(join(dir, d.name)) : d.name.endsWith('.ts') ? [join(dir, d.name)] : [],
  );
}

// The store itself and its decorators (metrics; the seal of protected fields), which forward every append, are not writers.
const NOT_WRITERS = [
  /^src\/platform\/eventstore\//,
  /^src\/platform\/metrics\/observed-store\.ts$/,
  /^src\/platform\/crypto\/protected-store\.ts$/,
];

describe('writes that bypass handleCommand', () => {
  const direct = files(join(root, 'src'))
    .map((f) => relative(root, f).split('\\').join('/'))
    .filter((f) => !NOT_WRITERS.some((r) => r.test(f)))
    .filter((f) => /\.append\(/.test(readFileSync(join(root, f), 'utf8')))
    .sort();

  it('are exactly the ones the architecture names', () => {
    expect(direct).toEqual([
      'src/billing/workers/budget-alerts/reactor.ts',
      'src/inference/usecases/completion-recorder.ts',
      'src/inference/usecases/engine.ts',
      'src/inference/usecases/supersede.ts',
      'src/inference/workers/sweeper.ts',
    ]);
  });

  it('are each named in docs/ARCHITECTURE.md', () => {
    const doc = readFileSync(join(root, 'docs/ARCHITECTURE.md'), 'utf8');
    for (const f of direct) expect(doc).toContain(`\`${f}\``);
  });
});
