import { createHash } from 'node:crypto';
import Redis from 'ioredis';
import type { Outcome, Proc, World } from './world';

// ioredis's own command class: a stand-in that takes the reply of a command whose caller was told it failed.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const Command = (require('ioredis/built/Command') as { default: new (name: string, args?: unknown[]) => { promise: Promise<unknown> } })
  .default;

/**
 * The real redis-server under the simulation, one command in flight. Every socket write of a
 * connection (one command, or one pipeline / MULTI) becomes a world step: nothing reaches Redis
 * until the simulator runs that step, and the step ends when every reply of the write has been
 * parsed. So the order of everything Redis sees is the seed's, and Lua runs with its real semantics.
 *
 * Outcomes: ok; unavailable (not sent; the caller's commands fail); ack_lost (sent and applied, the
 * caller's commands fail); crash before / after (the process dies, its connection with it).
 */

interface QueueItem {
  command: { name: string; promise: Promise<unknown>; reject(e: Error): void };
}
interface Deque {
  length: number;
  peekAt(i: number): QueueItem | undefined;
  shift(): QueueItem | undefined;
  clear(): void;
}
interface Internals {
  stream: { write(data: unknown, ...rest: unknown[]): boolean };
  commandQueue: Deque;
}

const REDIS_FAULTS: readonly Outcome[] = ['delay', 'unavailable', 'ack_lost', 'crash_before', 'crash_after'];

export class RedisUnavailable extends Error {
  override readonly name = 'RedisUnavailable';
}

/** What one write holds: how many commands, a label for the trace, the channels it publishes to, and its bytes. */
function describe(data: unknown): { n: number; label: string; published: Array<[string, string]>; bytes: Buffer } {
  const b = Buffer.isBuffer(data) ? data : Buffer.from(String(data));
  const published: Array<[string, string]> = [];
  let i = 0;
  let n = 0;
  const names: string[] = [];
  let firstKey = '';
  const line = () => {
    const end = b.indexOf('\r\n', i);
    const s = b.toString('latin1', i + 1, end);
    i = end + 2;
    return s;
  };
  while (i < b.length) {
    if (b[i] !== 0x2a) break; // '*'
    const count = Number(line());
    const args: Buffer[] = [];
    for (let k = 0; k < count; k++) {
      const len = Number(line());
      if (k < 3) args.push(b.subarray(i, i + len));
      i += len + 2;
    }
    n++;
    const name = args[0]?.toString('latin1').toLowerCase() ?? '?';
    if (name === 'publish' && args[2]) published.push([args[1].toString('utf8'), args[2].toString('utf8')]);
    if (names.length < 4) {
      if (name === 'eval') names.push(`script:${createHash('sha1').update(args[1]).digest('hex').slice(0, 6)}`);
      else if (name === 'evalsha') names.push(`script:${args[1]?.toString('latin1').slice(0, 6)}`);
      else names.push(name);
    }
    if (!firstKey && name !== 'eval' && name !== 'evalsha' && name !== 'multi' && args[1]) firstKey = args[1].toString('latin1');
  }
  const shown = names.join(',') + (n > names.length ? `,…(${n})` : '');
  return { n, label: firstKey ? `${shown} ${firstKey.replace(/^sim:\d+:/, '')}` : shown, published, bytes: b };
}

/** One gated connection. */
export class GatedRedis {
  owner: Proc | null = null;
  retired = false;
  private readonly origWrite: (data: unknown) => boolean;

  constructor(
    readonly redis: Redis,
    private readonly world: () => World | null,
    private readonly pubsub: SimPubSub,
  ) {
    const inner = redis as unknown as Internals;
    this.origWrite = inner.stream.write.bind(inner.stream);
    inner.stream.write = (data: unknown) => {
      const w = this.world();
      if (!w) return this.origWrite(data);
      if (this.retired) {
        // A dead process's connection: nothing it writes goes anywhere.
        queueMicrotask(() => inner.commandQueue.clear());
        return true;
      }
      const { n, label, published, bytes } = describe(data);
      w.step('redis', label, this, REDIS_FAULTS, (o) => this.run(w, o, bytes, n, published));
      return true;
    };
  }

  private get queue(): Deque {
    return (this.redis as unknown as Internals).commandQueue;
  }

  private head(n: number): QueueItem[] {
    const out: QueueItem[] = [];
    for (let i = 0; i < n; i++) out.push(this.queue.peekAt(i)!);
    return out;
  }

  private async run(w: World, o: Outcome, data: Buffer, n: number, published: Array<[string, string]>): Promise<void> {
    const items = this.head(n);
    if (o === 'unavailable') {
      for (let i = 0; i < n; i++) this.queue.shift();
      for (const it of items) it.command.reject(new RedisUnavailable('Connection is closed (simulated: Redis unavailable)'));
      return;
    }
    if (o === 'crash_before') {
      w.crash(w.current(), 'redis write');
      return;
    }
    if (o === 'ack_lost' || o === 'crash_after') {
      // Sent and applied; the caller hears of a broken connection instead of the replies.
      for (const it of items) {
        const original = it.command;
        const standIn = new Command('ping');
        standIn.promise.catch(() => undefined);
        (it as { command: unknown }).command = standIn;
        if (o === 'ack_lost') original.reject(new RedisUnavailable('Connection is closed (simulated: reply lost)'));
      }
    }
    this.origWrite(data);
    await Promise.allSettled(items.map((it) => it.command.promise));
    // Announcements reach the subscribers once the write is applied (a PUBLISH in a MULTI whose EXEC
    // failed is announced too: an announcement only makes a waiter look again).
    for (const [channel, message] of published) this.pubsub.publish(w, channel, message);
    if (o === 'crash_after') w.crash(w.current(), 'redis write');
  }

  retire(): void {
    this.retired = true;
    this.queue.clear();
  }
}

/**
 * Real connections, reused across schedules (a connection is made once per slot of the process);
 * one a dead process held is closed and replaced before the next schedule.
 */
export class RedisPool {
  readonly pubsub = new SimPubSub();
  private free: GatedRedis[] = [];
  private used: GatedRedis[] = [];
  world: World | null = null;
  /** Set when a connection reported an error of its own (the schedule it served is void). */
  broken: Error | null = null;

  constructor(private readonly url = 'redis://127.0.0.1:6379') {}

  private async fresh(): Promise<GatedRedis> {
    const r = new Redis(this.url, { lazyConnect: true, maxRetriesPerRequest: 1, enableOfflineQueue: false });
    await r.connect();
    const g = new GatedRedis(r, () => this.world, this.pubsub);
    // A broken connection fails the schedule it serves (a simulator defect), never the swarm worker.
    r.on('error', (err: Error) => {
      this.broken = err;
      g.retire();
    });
    return g;
  }

  /** Makes sure `n` connections are ready before a schedule (connecting is real I/O, outside it). */
  async prepare(n: number): Promise<void> {
    while (this.free.length < n) this.free.push(await this.fresh());
  }

  /** A connection for process `owner`, taken synchronously from the prepared ones. */
  take(owner: Proc): GatedRedis {
    const g = this.free.pop();
    if (!g) throw new Error('simulation: out of prepared Redis connections (raise the pool size)');
    g.owner = owner;
    g.retired = false;
    this.used.push(g);
    // Only while it still holds it: a connection it gave back may serve another process by now.
    owner.onCrash.push(() => {
      if (g.owner === owner) g.retire();
    });
    // Production code closes a connection it is done with (a projector giving a partition up): an
    // idle one goes back to the free list (its last write ended any MULTI and WATCH), else it is retired.
    g.redis.disconnect = () => {
      if (g.owner !== owner || g.retired) return;
      if ((g.redis as unknown as Internals).commandQueue.length === 0) {
        g.owner = null;
        this.used.splice(this.used.indexOf(g), 1);
        this.free.push(g);
      } else g.retire();
    };
    return g;
  }

  /** After a schedule: retired connections are closed, the others reset and returned. */
  async recycle(): Promise<void> {
    this.pubsub.reset();
    const used = this.used;
    this.used = [];
    for (const g of used) {
      // A schedule that ended mid-flight (a failure thrown between steps) leaves commands queued whose
      // writes never left: a reply would be matched to them, so such a connection is closed, not reused.
      if (g.redis.status !== 'ready' || (g.redis as unknown as Internals).commandQueue.length > 0) {
        Redis.prototype.disconnect.call(g.redis);
        continue;
      }
      try {
        // A dead process's connection: whatever it left half done (a WATCH) ends here, outside the schedule.
        g.retired = false;
        await g.redis.unwatch();
        g.owner = null;
        this.free.push(g);
      } catch {
        Redis.prototype.disconnect.call(g.redis);
      }
    }
  }

  async close(): Promise<void> {
    await this.recycle();
    for (const g of this.free) Redis.prototype.disconnect.call(g.redis);
    this.free = [];
  }
}

type Listener = (channel: string, message: string) => void;

/**
 * Redis pub/sub inside the simulation: a process's subscriber connection (only `on('message')` and
 * `subscribe`) hears what a gated connection PUBLISHed, right after that write's step, in the order
 * the subscribers subscribed, each as its own process (a dead one hears nothing).
 */
export class SimPubSub {
  private subs: Array<{ owner: Proc; channels: Set<string>; listeners: Listener[] }> = [];

  subscriber(owner: Proc): Redis {
    const sub = { owner, channels: new Set<string>(), listeners: [] as Listener[] };
    this.subs.push(sub);
    const fake = {
      on: (event: string, l: Listener) => {
        if (event === 'message') sub.listeners.push(l);
        return fake;
      },
      subscribe: async (...channels: string[]) => {
        for (const c of channels) sub.channels.add(c);
        return sub.channels.size;
      },
    };
    return fake as unknown as Redis;
  }

  publish(w: World, channel: string, message: string): void {
    for (const sub of this.subs) {
      if (sub.owner.dead || !sub.channels.has(channel)) continue;
      w.within(sub.owner, () => {
        for (const l of sub.listeners) l(channel, message);
      });
    }
  }

  reset(): void {
    this.subs = [];
  }
}
