import { join } from 'node:path';
import madge from 'madge';

const root = join(__dirname, '../../..');

/**
 * No import cycle under src/: a cycle makes load order decide what is undefined at start-up.
 * `require()` calls count too (mixedImports), so a lazy require cannot hide one; type-only imports
 * vanish at runtime and do not.
 */
describe('import graph of src/', () => {
  let graph: Awaited<ReturnType<typeof madge>>;
  beforeAll(async () => {
    graph = await madge(join(root, 'src'), {
      fileExtensions: ['ts'],
      tsConfig: join(root, 'tsconfig.json'),
      detectiveOptions: { ts: { skipTypeImports: true, mixedImports: true } },
    });
  }, 60_000);

  it('is read whole, lazy requires included', () => {
    const deps = graph.obj();
    expect(Object.keys(deps).length).toBeGreaterThan(100);
    expect(deps['main.ts']).toContain('load-modules.ts');
    // The lazy require('./modules'): if this edge vanished, a cycle through it could not be seen.
    expect(deps['load-modules.ts']).toContain('modules.ts');
  });

  it('has no cycle', () => {
    expect(graph.circular()).toEqual([]);
  });
});
