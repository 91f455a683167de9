import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { includesOf, luaScript } from '../../../src/platform/redis-scripts';

/**
 * The rules of the Lua files (src/platform/redis-scripts.ts): a script declares every shared helper
 * it calls (`--@include <name>`) and includes none it does not call; it reads its keys and
 * arguments by the names of its prologue, never by position; and every file is declared by the
 * TypeScript beside it.
 */

const SRC = join(__dirname, '..', '..', '..', 'src');

function* filesUnder(dir: string): Generator<string> {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    if (e.isDirectory()) yield* filesUnder(join(dir, e.name));
    else yield join(dir, e.name);
  }
}

const files = [...filesUnder(SRC)];
const luaFiles = files.filter((f) => f.endsWith('.lua')).map((f) => relative(SRC, f));
const tsText = files
  .filter((f) => f.endsWith('.ts'))
  .map((f) => readFileSync(f, 'utf8'))
  .join('\n');
const read = (file: string) => readFileSync(join(SRC, file), 'utf8');
/** Lua without its comments (`--` to the end of the line; the scripts use no long comments). */
const code = (lua: string) => lua.replace(/--.*$/gm, '');
const functionsOf = (lua: string) => [...code(lua).matchAll(/local function (\w+)/g)].map((m) => m[1]);

const RUNTIME_FILE = 'platform/projections/batch-runtime.lua';

/** Each include's helpers, by the include's name. */
function helpersByInclude(): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const f of luaFiles.filter((f) => f.endsWith('.inc.lua'))) out.set(f.replace(/^.*\/|\.inc\.lua$/g, ''), functionsOf(read(f)));
  // The batch runtime's helpers: what it defines before the script's body, and the table `memo`.
  const [head] = read(RUNTIME_FILE).split('--@body');
  const internal = new Set(['writeKey', 'writeAll', 'one']);
  out.set('batch-runtime', [...functionsOf(head).filter((f) => !internal.has(f)), 'memo']);
  return out;
}

/** The shared helpers `lua` uses that it does not define itself, by include. */
function usedIncludes(lua: string, helpers: Map<string, string[]>): Set<string> {
  const body = code(lua);
  const own = new Set(functionsOf(lua));
  const used = new Set<string>();
  for (const [include, names] of helpers) {
    for (const name of names) {
      if (own.has(name)) continue;
      const call = name === 'memo' ? /\bmemo\b/ : new RegExp(`(?<![.:\\w])${name}\\s*\\(`);
      if (call.test(body)) used.add(include);
    }
  }
  return used;
}

const scripts = luaFiles.filter((f) => !f.endsWith('.inc.lua') && f !== RUNTIME_FILE);

test('there are scripts to check (the walk finds the .lua files)', () => {
  expect(scripts.length).toBeGreaterThan(30);
  expect([...helpersByInclude().keys()].sort()).toEqual(['batch-runtime', 'grant-book', 'reserve']);
});

describe.each(scripts)('%s', (file) => {
  const lua = read(file);

  test('includes exactly the shared helpers it calls', () => {
    expect([...includesOf(lua)].sort()).toEqual([...usedIncludes(lua, helpersByInclude())].sort());
  });

  test('reads keys and arguments by name (KEYS[n] and ARGV[n] only in the prologue)', () => {
    expect(code(lua)).not.toMatch(/\bKEYS\s*\[\s*\d/);
    expect(code(lua)).not.toMatch(/\bARGV\s*\[\s*\d/);
  });

  test('is declared by the TypeScript that owns it', () => {
    expect(tsText).toContain(`'${file}'`);
  });
});

test('the check finds a helper used without its include line', () => {
  const lua = read('billing/projections/balances/member-spend.lua').replace(/^--@include batch-runtime\n/m, '');
  expect(includesOf(lua)).toEqual([]);
  expect([...usedIncludes(lua, helpersByInclude())]).toEqual(['batch-runtime']);
});

test('the loader refuses an include line it was not given, and an include given without its line', () => {
  expect(() => luaScript('inference/routes/admit.lua', { keys: [], args: [] })).toThrow(/--@include reserve/);
  const reserve = { name: 'reserve', text: '' };
  expect(() => luaScript('billing/projections/balances/release.lua', { keys: [], args: [] }, [reserve])).toThrow(
    /no --@include reserve line/,
  );
});

test('the prologue names each key and argument in order, and refuses a name twice', () => {
  const s = luaScript('billing/projections/balances/release.lua', {
    keys: ['held', 'total', 'open'],
    args: ['requestId', 'openMember', 'owner', 'keyTotalPrefix', 'member', 'memberTotalPrefix'],
  });
  expect(s.text.split('\n').slice(0, 4)).toEqual([
    'local held = KEYS[1]',
    'local total = KEYS[2]',
    'local open = KEYS[3]',
    'local requestId = ARGV[1]',
  ]);
  expect(
    s.evalArgs(
      { held: 'h', total: 't', open: 'o' },
      { requestId: 'r', openMember: 'w:r', owner: 'k', keyTotalPrefix: 'kt:', member: 'm', memberTotalPrefix: 'mt:' },
    ),
  ).toEqual([3, 'h', 't', 'o', 'r', 'w:r', 'k', 'kt:', 'm', 'mt:']);
  expect(() => luaScript('billing/projections/balances/release.lua', { keys: ['held'], args: ['held'] })).toThrow(/unique Lua name/);
});
