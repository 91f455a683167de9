import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { Redis } from 'ioredis';
import { eachScript } from '../../../src/platform/projections/batch-writes';
import { includesOf, luaInclude, resolveIncludes } from '../../../src/platform/redis-scripts';
import { TEST_REDIS_URL } from '../../support/redis';

/**
 * Every .lua file under src/ compiles on the real Redis (SCRIPT LOAD: compiled, not run), with its
 * includes resolved and, for a script that runs in the projector's batch runtime, inside it: a
 * syntax error is found here, not when the first request or batch reaches the script.
 */

const SRC = join(__dirname, '..', '..', '..', 'src');
function* filesUnder(dir: string): Generator<string> {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    if (e.isDirectory()) yield* filesUnder(join(dir, e.name));
    else if (e.name.endsWith('.lua')) yield relative(SRC, join(dir, e.name));
  }
}
const files = [...filesUnder(SRC)];
const includes = files.filter((f) => f.endsWith('.inc.lua')).map(luaInclude);
const scripts = files.filter((f) => !f.endsWith('.inc.lua') && !f.endsWith('batch-runtime.lua'));

const redis = new Redis(TEST_REDIS_URL);
afterAll(() => redis.disconnect());

test.each(scripts)('%s compiles', async (file) => {
  const lua = readFileSync(join(SRC, file), 'utf8');
  const named = includesOf(lua);
  const text = resolveIncludes(
    file,
    lua,
    named.map((name) => includes.find((i) => i.name === name) ?? { name, text: null }),
  );
  const sha = (await redis.script('LOAD', named.includes('batch-runtime') ? eachScript(text) : text)) as string;
  expect(sha).toMatch(/^[0-9a-f]{40}$/);
});

test('a script that does not compile is refused (the check can fail)', async () => {
  await expect(redis.script('LOAD', '// not Lua')).rejects.toThrow(/Error compiling script/);
});
