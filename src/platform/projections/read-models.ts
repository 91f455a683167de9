import type { Redis } from 'ioredis';
import { Keyspace } from './keyspace';
import { luaScript } from '../redis-scripts';

/** Builds a key in one generation of a read model: not per workspace, or (`.ws`) of one workspace (ProjectionTx.key, wsKey). */
export type KeyFn = ((...parts: string[]) => string) & { ws(workspaceId: string, ...parts: string[]): string };

/** The KeyFn of generation `gen` of `name`. */
export function keysIn(ks: Keyspace, name: string, gen: string): KeyFn {
  return Object.assign((...parts: string[]) => ks.rm(name, gen, ...parts), {
    ws: (workspaceId: string, ...parts: string[]) => ks.rmWs(name, gen, workspaceId, ...parts),
  });
}

/** A read `ReadModels.read` makes: the command and its arguments (hgetall's reply becomes an object). */
export type ReadCommand = ['get', string] | ['hget', string, string] | ['hgetall', string];

/** How many times `read` follows a generation that moved under it before it gives up. */
const SWITCHES_FOLLOWED = 5;

const READ_IN_GENERATION = luaScript('platform/projections/read-in-generation.lua', {
  keys: ['active'],
  args: ['gen', 'ifFirst'],
  rest: true,
});

/**
 * How long a request-path caller (admission, the key lookup, reservations) uses a projection's
 * active generation before it reads the pointer again. A script on a workspace's slot cannot read
 * the pointer (another slot on a Redis Cluster), so the caller names the generation: after a
 * rebuild switches one, a process reads the previous one for at most this long, and the previous
 * one is dropped only after twice this (rebuild.ts DROP_GRACE_MS), so it is still there to read.
 */
export const GENERATION_CACHE_MS = 1000;

/** A clock in milliseconds: the process's (Services.now), so a simulation drives it. */
export type MsClock = () => number;

/**
 * The active generation of projections, read at most once per GENERATION_CACHE_MS each, on the
 * caller's clock (Services.now: the simulator's virtual time, never Date.now on the request path).
 * A clock that went back reads the pointer again rather than keep a generation longer.
 */
export class ActiveGenerations {
  private readonly seen = new Map<string, { gen: string; at: number }>();

  constructor(
    private readonly redis: Redis,
    private readonly ks: Keyspace,
    private readonly now: MsClock,
    private readonly maxAgeMs = GENERATION_CACHE_MS,
  ) {}

  async get(name: string): Promise<string> {
    const s = this.seen.get(name);
    if (s) {
      const age = this.now() - s.at;
      if (age >= 0 && age < this.maxAgeMs) return s.gen;
    }
    return this.reload(name);
  }

  /** Reads the pointer now; true when the generation differs from the one used so far. */
  async moved(name: string): Promise<boolean> {
    const before = this.seen.get(name)?.gen;
    return (await this.reload(name)) !== before;
  }

  private async reload(name: string): Promise<string> {
    const gen = (await this.redis.get(this.ks.active(name))) ?? '0';
    this.seen.set(name, { gen, at: this.now() });
    return gen;
  }
}

/** Resolves a projection's active generation for queries. */
export class ReadModels {
  /** The generation each read model was last read in (`read` assumes it, and checks it). */
  private readonly seen = new Map<string, string>();
  private readonly script: ReturnType<typeof READ_IN_GENERATION.bind>;
  /** Whether the connection's socket holds this tick's reads back (coalesce). */
  private corked = false;

  constructor(
    readonly redis: Redis,
    readonly ks: Keyspace,
  ) {
    this.script = READ_IN_GENERATION.bind(redis, 'tollgateReadInGeneration');
  }

  async gen(name: string): Promise<string> {
    return (await this.redis.get(this.ks.active(name))) ?? '0';
  }

  /** A function that builds keys in the active generation of `name`. */
  async keys(name: string): Promise<KeyFn> {
    const gen = await this.gen(name);
    return keysIn(this.ks, name, gen);
  }

  /**
   * Reads in the active generation of `name` in one round trip (one script) where `keys` and a
   * read take two: the reads are made in the generation seen last, in the script that checks it is
   * still the active one; if a rebuild switched the pointer since, they are made again in the new
   * generation. So they are never made in a generation that was not active. Each debit's reactions
   * (auto-reload, budget and balance alerts) read this way. Returns the replies of `reads(k)` in
   * order (hgetall's as an object, a missing value as null); a command's error is thrown.
   * With `ifFirst`, the other reads are made only when the first one's reply is not null; else they
   * are null without being made (a key without a budget: its budget's period and spend are not read).
   */
  async read(name: string, reads: (k: KeyFn) => ReadCommand[], opts: { ifFirst?: boolean } = {}): Promise<unknown[]> {
    let gen = this.seen.get(name) ?? (await this.gen(name));
    for (let i = 0; ; i++) {
      const g = gen;
      const commands = reads(keysIn(this.ks, name, g));
      const packed: string[] = [];
      for (const c of commands) packed.push(String(c.length), ...c);
      this.coalesce();
      const res = (await this.script({ active: this.ks.active(name) }, { gen: g, ifFirst: opts.ifFirst ? '1' : '' }, packed)) as unknown[];
      const active = res[0] as string;
      if (active === g) {
        this.seen.set(name, g);
        return commands.map((c, j) =>
          j + 1 >= res.length ? null : c[0] === 'hgetall' ? pairs(res[j + 1] as string[]) : (res[j + 1] ?? null),
        );
      }
      if (i >= SWITCHES_FOLLOWED) throw new Error(`read model ${name}: its generation kept switching (last ${active})`);
      gen = active;
    }
  }

  /**
   * Reads made in the same tick leave in one socket write: the socket is corked at the first and
   * uncorked once the tick's work is done (process.nextTick runs after the promise jobs queued so
   * far). A debit's reactions (runReactors runs the reactors side by side) each start with a read
   * here; on loopback TCP each write() also does the kernel's delivery to Redis, the largest item
   * in a throttled projector's profile, so three or four of them become one. No read waits longer.
   */
  private coalesce(): void {
    const stream = this.redis.stream;
    if (this.corked || this.redis.status !== 'ready' || !stream?.writable) return;
    stream.cork();
    this.corked = true;
    process.nextTick(() => {
      this.corked = false;
      stream.uncork();
    });
  }
}

/** HGETALL's flat [field, value, …] reply as an object (what ioredis makes of it outside a script). */
function pairs(flat: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (let i = 0; i < flat.length; i += 2) out[flat[i]] = flat[i + 1];
  return out;
}
