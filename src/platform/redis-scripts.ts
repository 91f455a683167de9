import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ChainableCommander, Redis } from 'ioredis';

/**
 * Lua scripts live in `.lua` files beside the TypeScript that owns them. A script is declared once,
 * with the names of its keys and arguments in order:
 *
 *   const ADMIT = luaScript('inference/routes/admit.lua', { keys: ['keyIndexActive', …], args: ['amount', …] }, [reserveLua]);
 *
 * The loader reads the file once, when the owning module loads (never per call), and prepends a
 * prologue generated from those tuples (`local amount = ARGV[1]` …, `local keyIndexActive = KEYS[1]`),
 * so the file uses the names only and a caller fills an object whose fields are typed from the same
 * tuples: a position cannot drift between the caller and the script.
 *
 * `--@include <name>` lines in a file are replaced by the text of the include of that name (a
 * `<name>.inc.lua` file, declared with luaInclude and handed to luaScript by the caller); a script
 * uses no shared function it does not include (checked by test/platform/unit/lua-includes.test.ts).
 * An include whose text is null is provided by what runs the script (the projector's batch runtime,
 * ./projections/batch-writes.ts): the line only declares it.
 *
 * Where the files are: beside this module's folder's parent (src/ from source and in tests, dist/src
 * once built: the build copies them, bin/build-if-stale.js). A test's child process runs as one
 * esbuild bundle outside the checkout; its bundler defines TOLLGATE_SRC_DIR to the checkout's src/
 * (test/support/child-process.ts).
 */

declare const TOLLGATE_SRC_DIR: string | undefined;

const SRC_DIR = typeof TOLLGATE_SRC_DIR === 'string' ? TOLLGATE_SRC_DIR : join(__dirname, '..');

/** The Lua file's text, as stored (`file` relative to src/). */
export function luaSource(file: string): string {
  return readFileSync(join(SRC_DIR, file), 'utf8');
}

/** Shared Lua functions that scripts include with `--@include <name>`. */
export interface LuaInclude {
  readonly name: string;
  /** Null: provided by what runs the script, the include line only declares it. */
  readonly text: string | null;
}

/** `file` (relative to src/) is `<name>.inc.lua`. */
export function luaInclude(file: string): LuaInclude {
  const m = /([^/]+)\.inc\.lua$/.exec(file);
  if (!m) throw new Error(`a Lua include is a <name>.inc.lua file: ${file}`);
  return { name: m[1], text: luaSource(file) };
}

/** An include whose functions the runner of the script defines (the batch runtime). */
export function providedInclude(name: string): LuaInclude {
  return { name, text: null };
}

type Names = readonly string[];
/** One value per name of the tuple. */
export type Named<T extends Names> = { readonly [P in T[number]]: string | number };

export interface LuaShape<K extends Names, A extends Names> {
  keys: K;
  args: A;
  /**
   * Arguments after the named ones, any number (a batch's calls, a list of keys): the script reads
   * them from ARGV[restFrom] on (`restFrom` is a local of the prologue).
   */
  rest?: boolean;
  /**
   * Values fixed for the life of the process that the script needs by name (another area's field
   * names): written into the prologue as string literals, so no one splices Lua text by hand.
   */
  constants?: Readonly<Record<string, string>>;
}

export class LuaScript<K extends Names, A extends Names> {
  /** The text sent to Redis: the prologue, then the file with its includes. */
  readonly text: string;
  readonly numberOfKeys: number;

  constructor(
    readonly file: string,
    readonly shape: LuaShape<K, A>,
    body: string,
  ) {
    this.numberOfKeys = shape.keys.length;
    this.text = prologue(shape) + body;
  }

  /** The keys in their declared order. */
  keysOf(keys: Named<K>): string[] {
    const out: string[] = [];
    for (const k of this.shape.keys) out.push(String(keys[k as K[number]]));
    return out;
  }

  /** The named arguments in their declared order, then `rest`. */
  argsOf(args: Named<A>, rest: ReadonlyArray<string | number> = []): string[] {
    const out: string[] = [];
    for (const a of this.shape.args) out.push(String(args[a as A[number]]));
    for (const r of rest) out.push(String(r));
    return out;
  }

  /** EVAL's arguments after the script: numkeys, keys, args. */
  evalArgs(keys: Named<K>, args: Named<A>, rest?: ReadonlyArray<string | number>): Array<string | number> {
    return [this.numberOfKeys, ...this.keysOf(keys), ...this.argsOf(args, rest)];
  }

  /** EVAL with the full text (for a script run rarely, or queued where a NOSCRIPT must not happen). */
  eval(on: Redis | ChainableCommander, keys: Named<K>, args: Named<A>, rest?: ReadonlyArray<string | number>): Promise<unknown> {
    return (on as Redis).eval(this.text, ...(this.evalArgs(keys, args, rest) as [number, ...string[]]));
  }

  /**
   * Queued once per call on a projection's batch (ProjectionTx.evalEach: the batch runtime runs the
   * script once per call, all of a batch's calls in one EVAL).
   */
  each(tx: { evalEach(lua: string, keys: readonly string[], args: readonly string[]): void }, keys: Named<K>, args: Named<A>): void {
    tx.evalEach(this.text, this.keysOf(keys), this.argsOf(args));
  }

  /**
   * Bound to a connection under `name` (ioredis defineCommand): EVALSHA (the 40-character digest),
   * falling back to the full text once, after a NOSCRIPT.
   */
  bind(redis: Redis, name: string): (keys: Named<K>, args: Named<A>, rest?: ReadonlyArray<string | number>) => Promise<unknown> {
    const commands = redis as unknown as Record<string, ((...a: string[]) => Promise<unknown>) | undefined>;
    if (typeof commands[name] !== 'function') redis.defineCommand(name, { numberOfKeys: this.numberOfKeys, lua: this.text });
    const call = commands[name]!;
    return (keys, args, rest) => call.apply(redis, [...this.keysOf(keys), ...this.argsOf(args, rest)]);
  }
}

const INCLUDE_LINE = /^--@include\s+(\S+)\s*$/gm;

/** The `--@include` names of a Lua text, in order. */
export function includesOf(lua: string): string[] {
  return [...lua.matchAll(INCLUDE_LINE)].map((m) => m[1]);
}

/** `lua` with each include line replaced by its include's text; every include given must be used and vice versa. */
export function resolveIncludes(file: string, lua: string, includes: readonly LuaInclude[]): string {
  const byName = new Map(includes.map((i) => [i.name, i]));
  const named = includesOf(lua);
  for (const name of named)
    if (!byName.has(name)) throw new Error(`${file}: --@include ${name}, but the script was not given that include`);
  for (const name of byName.keys())
    if (!named.includes(name)) throw new Error(`${file}: given the include ${name}, but has no --@include ${name} line`);
  return lua.replace(INCLUDE_LINE, (_, name: string) => byName.get(name)!.text ?? `-- ${name}: provided by the runtime`);
}

/** Declares the script in `file` (relative to src/) with its keys and arguments, and the includes it uses. */
export function luaScript<const K extends Names, const A extends Names>(
  file: string,
  shape: LuaShape<K, A>,
  includes: readonly LuaInclude[] = [],
): LuaScript<K, A> {
  return new LuaScript(file, shape, resolveIncludes(file, luaSource(file), includes));
}

const LUA_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

function prologue({ keys, args, rest, constants = {} }: LuaShape<Names, Names>): string {
  const lines: string[] = [];
  const seen = new Set<string>();
  const bind = (name: string, from: string) => {
    if (!LUA_NAME.test(name) || seen.has(name)) throw new Error(`a Lua script's key or argument name must be a unique Lua name: ${name}`);
    seen.add(name);
    lines.push(`local ${name} = ${from}`);
  };
  for (const [name, value] of Object.entries(constants)) {
    if (!/^[\x20-\x7e]*$/.test(value) || /['\\]/.test(value)) throw new Error(`a Lua constant is printable ASCII without ' or \\: ${name}`);
    bind(name, `'${value}'`);
  }
  keys.forEach((k, i) => bind(k, `KEYS[${i + 1}]`));
  args.forEach((a, i) => bind(a, `ARGV[${i + 1}]`));
  if (rest) lines.push(`local restFrom = ${args.length + 1}`);
  return lines.length ? lines.join('\n') + '\n' : '';
}
