import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { envSchema } from '../../../src/platform/config';

/** The README's settings table is the operator's reference: every setting the schema reads must be in it. */
describe('README configuration table', () => {
  const readme = readFileSync(join(__dirname, '../../../README.md'), 'utf8');
  const section = readme.split('## Configuration')[1]?.split('\n## ')[0] ?? '';
  const documented = new Set(
    section
      .split('\n')
      .filter((line) => line.startsWith('| `'))
      .flatMap((line) => [...line.split('|')[1]!.matchAll(/`([A-Z0-9_]+)`/g)].map((m) => m[1]!)),
  );

  it('names every setting of src/platform/config.ts in its first column', () => {
    const settings = Object.keys(envSchema.shape);
    expect(settings.length).toBeGreaterThan(10);
    expect(settings.filter((name) => !documented.has(name))).toEqual([]);
  });

  it('names no setting that src/platform/config.ts does not read', () => {
    const settings = new Set(Object.keys(envSchema.shape));
    expect([...documented].filter((name) => !settings.has(name))).toEqual([]);
  });
});
