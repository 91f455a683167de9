/**
 * What bench:redis reads from its private redis-server: the server's CPU (INFO cpu, getrusage of
 * the whole process), the commands it ran (INFO commandstats, which counts the commands a script
 * runs as well as the EVAL/EVALSHA that ran it), and, in a profiled pass, every command in SLOWLOG
 * (threshold 0) with its execution time and the connection name that sent it. Redis 7.0 logs a
 * script's own commands (client "?:0") just before the EVAL/EVALSHA that ran them, so they are
 * charged to that script. Scripts are named by SHA: the ones registered with ioredis's
 * defineCommand (recorded as they are defined), and every Lua text in src/ (`.lua` files and
 * template strings that call redis.call), matched by digest or, for an EVAL whose text SLOWLOG cut
 * at 128 bytes, by its beginning.
 */
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { Command, Redis } from 'ioredis';
import { RespArgs } from '../../src/platform/projections/resp-args';

const ROOT = join(__dirname, '../..');
const sha1 = (s: string) => createHash('sha1').update(s).digest('hex');
const squash = (s: string) => s.replace(/\s+/g, '');

// ---------------------------------------------------------------- scripts by name

interface KnownScript {
  name: string;
  /** The text with interpolations cut out: the pieces between them, whitespace removed. */
  pieces: string[];
}

const bySha = new Map<string, string>();
/** Digests of the scripts ioredis sends as EVALSHA (their EVAL fallback must keep its text and digest). */
const defined = new Set<string>();
const known: KnownScript[] = [];

/** Records every script ioredis registers (name and digest) from now on. Call before the service starts. */
export function recordDefinedScripts(): void {
  const proto = Redis.prototype as unknown as { defineCommand(name: string, def: { lua: string }): void };
  const original = proto.defineCommand;
  proto.defineCommand = function (this: unknown, name: string, def: { lua: string }) {
    bySha.set(sha1(def.lua), name);
    defined.add(sha1(def.lua));
    known.push({ name, pieces: [squash(def.lua)] });
    return original.call(this, name, def);
  };
}

function walk(dir: string, out: string[] = []): string[] {
  for (const f of readdirSync(dir)) {
    const p = join(dir, f);
    if (statSync(p).isDirectory()) walk(p, out);
    else if (/\.(ts|lua)$/.test(f)) out.push(p);
  }
  return out;
}

/** Every Lua text in src/: `.lua` files by path, template strings by file and the constant they are assigned to. */
export function catalogueSourceScripts(): void {
  for (const file of walk(join(ROOT, 'src'))) {
    const rel = relative(join(ROOT, 'src'), file);
    const text = readFileSync(file, 'utf8');
    if (file.endsWith('.lua')) {
      bySha.set(sha1(text), rel);
      known.push({ name: rel, pieces: [squash(text)] });
      continue;
    }
    for (const m of text.matchAll(/(?:const|let)\s+([A-Za-z0-9_]+)\s*=\s*`([^`]*)`/g)) {
      const body = m[2];
      if (!/redis\.p?call/.test(body)) continue;
      const name = `${rel.replace(/\.ts$/, '')}#${m[1]}`;
      if (!body.includes('${')) bySha.set(sha1(body), name);
      known.push({
        name,
        pieces: body
          .split(/\$\{[^}]*\}/)
          .map(squash)
          .filter(Boolean),
      });
    }
  }
}

const named = new Map<string, string>();

/** The known script the most of whose text `lua` holds (a batch runtime wraps a projection's script). */
export function nameOfText(lua: string): string {
  let name = named.get(lua);
  if (name) return name;
  const seen = squash(lua);
  let best = 0;
  for (const k of known) {
    const size = k.pieces.reduce((n, p) => n + p.length, 0);
    if (size > best && k.pieces.every((p) => seen.includes(p))) {
      best = size;
      name = k.name;
    }
  }
  name ??= `EVAL "${lua.slice(0, 40).replace(/\s+/g, ' ')}…"`;
  named.set(lua, name);
  return name;
}

let tagging = false;

/**
 * While on, every EVAL this process sends starts with a Lua comment naming its script (SLOWLOG
 * keeps only an argument's first 128 bytes, and the batch runtime's scripts all begin alike).
 */
export function tagEvals(on: boolean): void {
  tagging = on;
}

const TAG = /^-- script: (.*)\n/;

/** Installs the EVAL tagging (off until tagEvals(true)). */
export function installEvalTags(): void {
  // The projector's batch scripts go out pre-encoded (resp-args.ts): tag them as they are queued.
  const resp = RespArgs.prototype as unknown as { queue(multi: unknown, name: string, head: readonly string[]): void };
  const queue = resp.queue;
  resp.queue = function (this: unknown, multi: unknown, name: string, head: readonly string[]) {
    const tagged =
      tagging && name === 'eval' && head.length > 0 && !TAG.test(head[0])
        ? [`-- script: ${nameOfText(head[0])}\n${head[0]}`, ...head.slice(1)]
        : head;
    return queue.call(this, multi, name, tagged);
  };
  const proto = Command.prototype as unknown as { toWritable(socket: unknown): unknown; name: string; args: unknown[] };
  const original = proto.toWritable;
  proto.toWritable = function (this: { name: string; args: unknown[] }, socket: unknown) {
    if (
      tagging &&
      this.name === 'eval' &&
      typeof this.args[0] === 'string' &&
      !TAG.test(this.args[0]) &&
      !defined.has(sha1(this.args[0]))
    ) {
      this.args[0] = `-- script: ${nameOfText(this.args[0])}\n${this.args[0]}`;
    }
    return original.call(this, socket);
  };
}

/** The name ioredis's defineCommand (or a source file) gives a digest. */
export function nameOfSha(sha: string): string {
  return bySha.get(sha.toLowerCase()) ?? `sha ${sha.slice(0, 12)}`;
}

/** The script behind an EVALSHA digest or an EVAL text (possibly cut by SLOWLOG). */
export function scriptName(command: string, arg: string): string {
  if (command === 'evalsha') return bySha.get(arg.toLowerCase()) ?? `sha ${arg.slice(0, 12)}`;
  const tag = TAG.exec(arg);
  if (tag) return `${tag[1]} (EVAL)`;
  const cut = / \.\.\. \(\d+ more bytes\)$/.exec(arg);
  if (!cut) return `${nameOfText(arg)} (EVAL)`;
  const seen = squash(arg.slice(0, cut.index));
  const hit = known.find((k) => k.pieces[0]?.startsWith(seen));
  return `${hit ? hit.name : `EVAL "${arg.slice(0, 40).replace(/\s+/g, ' ')}…"`} (EVAL)`;
}

// ---------------------------------------------------------------- server counters

export interface Counters {
  cpuUs: number;
  /** Command name (lower case) → calls and µs (EVAL/EVALSHA µs include their commands'). */
  commands: Map<string, { calls: number; usec: number }>;
}

export async function readCounters(r: Redis): Promise<Counters> {
  const cpu = await r.info('cpu');
  const num = (k: string) => Number(new RegExp(`^${k}:([\\d.]+)`, 'm').exec(cpu)?.[1] ?? 0);
  const stats = await r.info('commandstats');
  const commands = new Map<string, { calls: number; usec: number }>();
  for (const m of stats.matchAll(/^cmdstat_([^:]+):calls=(\d+),usec=(\d+)/gm))
    commands.set(m[1], { calls: Number(m[2]), usec: Number(m[3]) });
  return { cpuUs: (num('used_cpu_user') + num('used_cpu_sys')) * 1e6, commands };
}

/** The bench's own INFO/CONFIG/SLOWLOG calls, left out of the counts. */
const OWN = new Set(['info', 'config|resetstat', 'config|set', 'config', 'slowlog|get', 'slowlog|reset', 'slowlog']);

export function totalCalls(c: Counters): number {
  let n = 0;
  for (const [name, v] of c.commands) if (!OWN.has(name)) n += v.calls;
  return n;
}

/** Resets the counters and, when `profile`, logs every command (SLOWLOG at threshold 0). */
export async function resetStats(r: Redis, profile: boolean): Promise<void> {
  await r.config('SET', 'slowlog-log-slower-than', profile ? '0' : '-1');
  await r.config('SET', 'slowlog-max-len', '2000000');
  await r.slowlog('RESET');
  await r.config('RESETSTAT');
}

// ---------------------------------------------------------------- the profiled pass

export interface Tally {
  calls: number;
  /** Commands the scripts among `calls` ran. */
  inner: number;
  /** Execution µs (a script's includes its commands'). */
  usec: number;
}
const tally = (): Tally => ({ calls: 0, inner: 0, usec: 0 });

export interface Profile {
  /** By connection name (`tollgate:main`, `tollgate:projector` …). */
  byConnection: Map<string, Tally>;
  /** By script name, with the connection names that ran it. */
  byScript: Map<string, Tally & { connections: Set<string> }>;
  /** Top-level commands other than scripts, by connection and command. */
  plain: Map<string, Tally>;
  entries: number;
}

type SlowEntry = [number, number, number, string[], string, string];

/** SLOWLOG read oldest first, scripts' commands charged to the script that ran them. */
export async function readProfile(r: Redis): Promise<Profile> {
  const raw = ((await r.call('SLOWLOG', 'GET', '-1')) as SlowEntry[]).slice().reverse();
  const byConnection = new Map<string, Tally>();
  const byScript = new Map<string, Tally & { connections: Set<string> }>();
  const plain = new Map<string, Tally>();
  let inner = 0;
  for (const [, , usec, args, addr, name] of raw) {
    const cmd = String(args[0]).toLowerCase();
    if (addr.startsWith('?')) {
      inner++;
      continue;
    }
    if (cmd === 'slowlog' || cmd === 'info' || cmd === 'config') continue;
    const conn = name || addr;
    const c = byConnection.get(conn) ?? tally();
    byConnection.set(conn, c);
    // EXEC's time is the sum of the commands it ran, which are logged themselves.
    if (cmd !== 'exec') c.usec += usec;
    c.calls++;
    if (cmd === 'eval' || cmd === 'evalsha') {
      const script = scriptName(cmd, String(args[1]));
      const s = byScript.get(script) ?? { ...tally(), connections: new Set<string>() };
      byScript.set(script, s);
      s.calls++;
      s.inner += inner;
      s.usec += usec;
      s.connections.add(conn.replace(/^tollgate:/, ''));
      c.inner += inner;
      inner = 0;
    } else {
      const k = `${conn.replace(/^tollgate:/, '')} ${cmd}`;
      const p = plain.get(k) ?? tally();
      plain.set(k, p);
      p.calls++;
      if (cmd !== 'exec') p.usec += usec;
    }
  }
  return { byConnection, byScript, plain, entries: raw.length };
}
