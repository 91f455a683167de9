import type { ChainableCommander, Redis } from 'ioredis';
import type { EventStore, RecordedEvent, Subscription } from '../eventstore/port';
import type { Logger } from '../log';
import { loadProjectionState, ProjectionBatch, ProjectionState } from './apply-batch';
import { batched } from './batched';
import { runReactors } from './reactions';
import { dropAbandonedGenerations } from './generations';
import { Keyspace } from './keyspace';
import { PositionWaiters } from './position-waiters';
import type { Projection, Reactor } from './projection';
import { adoptRebuilt, advanceCheckpoints, Expected, Fence, FencedOut, GenerationSwitched, guardBatch, guardedOutcome, markReady, movedUnderneath } from './switch-over';

export interface RunnerOptions {
  store: EventStore;
  /** A connection of the runner's own: WATCH is per connection. */
  redis: Redis;
  ks: Keyspace;
  projections: Projection[];
  reactors?: Reactor[];
  batchSize: number;
  log: Logger;
  /** Subscriber for switch-over announcements: a rebuild's switch is picked up at once, else within `watchIntervalMs`. */
  notifications?: Redis;
  /**
   * How often an idle runner compares Redis with what it holds: a switched generation, a moved
   * checkpoint or a Redis that lost its data (flushed, restarted empty) is noticed without an event.
   */
  watchIntervalMs?: number;
  /** Told when Redis lost a projection's state and the runner rebuilds it from the store. */
  onStateLost?: (name: string) => void;
  /** A partition owner's fencing token: every batch commits only while Redis holds it. */
  fence?: Fence;
  /** Told when the fence refused a batch: the runner has stopped (its partition moved). */ onFencedOut?: () => void;
  /**
   * A partition's events (those some projection or reactor of this runner acts on). A live batch
   * with none of them only moves the checkpoints, in one script (advanceOnly).
   */
  owns?: (e: RecordedEvent) => boolean;
}

const DEFAULT_WATCH_MS = 500;

/**
 * Events per batch while catching up: a larger batch sums more of its increments per field
 * (bench:projector: Redis CPU per event 55 → 43 µs from 2,000 to 10,000) and costs fewer round trips.
 */
const CATCH_UP_BATCH = 10_000;

/**
 * Events per read while catching up: a batch is built from several reads, each applied as it
 * comes, so only one read's events (and the next, read ahead) are alive at once, not two whole
 * batches: the garbage collector copies what is alive (bench:projector: projector CPU per event
 * 23.0 → 21.4 µs side by side with reads of 2,500 against 10,000, Redis's unchanged: the MULTI still
 * holds 10,000 events; reads of 1,000 were no worse).
 */
const CATCH_UP_READ = 1_000;

/**
 * A catch-up batch also ends, between reads, once its MULTI holds this many commands. Most events
 * become a few batched scripts per batch (ProjectionTx.hincrby, evalEach), but some projections queue
 * their own command per event (tx.multi: sign-ups, keys, deposits), and each is an ioredis command
 * with its promises alive until the MULTI's reply: a 10,000-event batch of such history held ~50,000
 * (bench:projector's first 20,000 events: 71 → 56 µs of projector CPU per event with this limit).
 */
const CATCH_UP_COMMANDS = 3_000;

/** One batch's pipeline (guard, MULTI, the batch), built but not sent, and the checkpoints it leaves. */
interface PreparedBatch {
  multi: ChainableCommander | null;
  next: Map<string, bigint>;
  last: bigint;
  /** The fencing token the batch is guarded with ('' without a fence; null: the runner held none). */
  token: string | null;
}

/**
 * Runs projections (and reactors) live. One loop reads the event store once for all of them; each
 * batch becomes one MULTI holding every projection's changes and its checkpoint.
 */
export class ProjectionRunner {
  private readonly state = new Map<string, ProjectionState>();
  private readonly reactorCheckpoints = new Map<string, bigint>();
  private sub: Subscription | null = null;
  private running = false;
  private loopDone: Promise<void> = Promise.resolve();
  private wakeBackoff: (() => void) | null = null;
  private minCheckpoint = 0n;
  /** Highest position read from the store (only meaningful with no projection or reactor). */
  private processed = 0n;
  private readonly waiters = new PositionWaiters();
  /** Set when the watcher saw Redis differ from what the runner holds. */
  private interrupted = false;
  /** True while the loop waits on its live subscription (and nothing else touches Redis). */
  private idle = false;
  private watchTimer: NodeJS.Timeout | null = null;
  private watching = false;
  private markedCaughtUp: () => void = () => undefined;
  /** Resolves the first time every projection is caught up (its ready marker set). */
  readonly caughtUp = new Promise<void>((r) => (this.markedCaughtUp = r));

  constructor(private readonly opts: RunnerOptions) {}

  /** Position every projection has reached. */
  get position(): bigint {
    return this.minCheckpoint;
  }

  async start(): Promise<void> {
    if (this.running) return;
    this.running = true;
    await this.loadState();
    for (const p of this.opts.projections) await dropAbandonedGenerations(this.opts.redis, this.opts.ks, p.name);
    const n = this.opts.notifications;
    if (n) {
      n.on('message', (channel: string) => {
        if (channel === this.opts.ks.switchChannel) this.interrupt();
      });
      await n.subscribe(this.opts.ks.switchChannel);
    }
    this.watchTimer = setInterval(() => void this.watch(), this.opts.watchIntervalMs ?? DEFAULT_WATCH_MS);
    this.watchTimer.unref();
    this.loopDone = this.loop();
  }

  async stop(): Promise<void> {
    this.running = false;
    if (this.watchTimer) clearInterval(this.watchTimer);
    this.watchTimer = null;
    await this.opts.notifications?.unsubscribe().catch(() => undefined);
    this.wakeBackoff?.();
    await this.sub?.close();
    await this.loopDone;
    await this.sub?.close();
    this.sub = null;
  }

  /** Resolves once every projection has applied the event at `position` (or on timeout, false). */
  waitFor(position: bigint, timeoutMs: number): Promise<boolean> {
    if (this.minCheckpoint >= position) return Promise.resolve(true);
    return this.waiters.wait(position, timeoutMs);
  }

  private async loadState(): Promise<void> {
    const { redis, ks, projections, reactors = [] } = this.opts;
    if (projections.length + reactors.length === 0) this.processed = await this.opts.store.headPosition();
    for (const p of projections) {
      const before = this.state.get(p.name);
      const now = await loadProjectionState(redis, ks, p.name);
      // Same generation but an older checkpoint (or the pointer gone): Redis lost its data. The
      // ready marker goes until the catch-up from the store is done, so the api answers 503.
      const lost = before && ((now.gen === before.gen && now.checkpoint < before.checkpoint) || (now.gen === '0' && before.gen !== '0'));
      if (lost) {
        await redis.del(ks.ready(p.name));
        this.opts.log.warn({ projection: p.name, checkpoint: now.checkpoint.toString() }, 'Redis lost this read model; rebuilding it from the event store');
        this.opts.onStateLost?.(p.name);
      }
      this.state.set(p.name, now);
    }
    for (const r of reactors) {
      const cp = await redis.get(ks.reactorCheckpoint(r.name));
      if (cp !== null) this.reactorCheckpoints.set(r.name, BigInt(cp));
      else {
        // A reactor seen for the first time starts at the head: a fresh Redis must never re-run
        // the side effects of history (charges are decided from the ledger anyway).
        const head = await this.opts.store.headPosition();
        await redis.set(ks.reactorCheckpoint(r.name), head.toString());
        this.reactorCheckpoints.set(r.name, head);
      }
    }
    this.updateMin();
  }

  private updateMin(): void {
    this.minCheckpoint = this.progressAfter(NOTHING_MOVED);
    this.waiters.reached(this.minCheckpoint);
  }

  private async loop(): Promise<void> {
    let backoff = 100;
    while (this.running) {
      try {
        await this.catchUp();
        await adoptRebuilt(this.opts, this.state);
        this.updateMin();
        if (!this.running) break;
        this.sub = this.opts.store.subscribeToAll({ after: this.minCheckpoint, decode: typesRead(this.opts) });
        // stop() may have run while catching up, before this subscription existed.
        if (!this.running) break;
        this.idle = true;
        for await (const events of batched(this.sub, this.opts.batchSize)) {
          this.idle = false;
          if (!this.running || this.interrupted) break;
          await this.commit(events, true);
          await this.react(events);
          backoff = 100;
          if (this.interrupted) break;
          this.idle = true;
        }
        this.idle = false;
        if (this.interrupted) throw new GenerationSwitched();
      } catch (err) {
        this.idle = false;
        this.interrupted = false;
        if (!this.running) break;
        if (err instanceof FencedOut) {
          this.opts.log.warn({ err: err.message }, 'another projector owns this partition now; its batch was refused');
          this.running = false;
          await this.sub?.close();
          this.sub = null;
          this.opts.onFencedOut?.();
          break;
        }
        if (err instanceof GenerationSwitched) {
          this.opts.log.info('projection generation or checkpoint changed underneath; resubscribing');
        } else {
          this.opts.log.error({ err, retryInMs: backoff }, 'projection runner failed; retrying');
          await new Promise<void>((r) => {
            const t = setTimeout(r, backoff);
            this.wakeBackoff = () => (clearTimeout(t), r());
          });
          this.wakeBackoff = null;
          backoff = Math.min(backoff * 2, 5000);
        }
        await this.sub?.close();
        this.sub = null;
        await this.loadState().catch((e) => this.opts.log.error({ err: e }, 'reloading projection state failed'));
      }
    }
  }

  /**
   * Compares Redis with what the runner holds while it waits for events; any difference (a
   * switched generation, a moved checkpoint, a missing ready marker) wakes the loop to reload.
   */
  private async watch(): Promise<void> {
    if (!this.running || this.watching) return;
    this.watching = true;
    try {
      const { redis, ks, projections } = this.opts;
      if (await movedUnderneath(redis, ks, projections, this.state, () => this.idle)) this.interrupt();
    } catch {
      // Redis unreachable: the loop reports it when it next needs Redis.
    } finally {
      this.watching = false;
    }
  }

  /** Makes the loop reload its state from Redis and catch up from there, now. */
  private interrupt(): void {
    if (!this.running) return;
    this.interrupted = true;
    if (this.idle) void this.sub?.close();
  }

  /** Sets every projection's ready marker, if Redis still holds exactly what the runner holds. */
  private async markCaughtUp(): Promise<void> {
    const { redis, ks, projections } = this.opts;
    await markReady(redis, ks, projections, this.state);
    this.markedCaughtUp();
  }

  /**
   * Reads straight from the store in large batches until the head: fast start after downtime.
   * Three things overlap: the store reads the batch after next, this process builds the next
   * batch's MULTI, and Redis applies the current one (on a free core each would otherwise wait for
   * the others). A built batch is sent only once the one before it committed, and only if the
   * checkpoints are then what it was built from; its WATCH is sent just before it.
   */
  private async catchUp(): Promise<void> {
    const size = Math.max(this.opts.batchSize, CATCH_UP_BATCH);
    const chunk = Math.min(size, CATCH_UP_READ);
    // Only paces a log line: a monotonic clock of the process, not the service clock.
    let lastLog = performance.now();
    // Up to the head seen on entry: under constant writes the live subscription takes over from there.
    const head = await this.opts.store.headPosition();
    const decode = typesRead(this.opts);
    const read = (from: bigint) =>
      this.opts.store.readAll({ fromPosition: from, maxCount: chunk + 1, decode }).then((es) => es.filter((e) => e.position > from));
    const reacts = reactedTypes(this.opts.reactors);
    let next: Promise<RecordedEvent[]> | null = null;
    // The batch whose MULTI is in flight, the events its reactors see, and the checkpoints it leaves once committed.
    let inflight: { done: Promise<void>; events: RecordedEvent[]; last: bigint; leaves: Map<string, bigint> } | null = null;
    const settle = async () => {
      const f = inflight;
      inflight = null;
      if (!f) return;
      await f.done;
      await this.react(f.events, f.last);
    };
    try {
      let from = this.minCheckpoint;
      for (;;) {
        if (!this.running) return await settle();
        if (from >= head) {
          await settle();
          return await this.markCaughtUp();
        }
        if (performance.now() - lastLog > 2000) {
          lastLog = performance.now();
          this.opts.log.info({ position: from.toString(), head: head.toString() }, 'projections catching up');
        }
        // One batch, from reads of `chunk` events applied as they come (the next one read ahead).
        const builder = this.startBatch(false, inflight?.leaves);
        const reacted: RecordedEvent[] = [];
        let count = 0;
        let last = from;
        while (count < size && builder.queued() < CATCH_UP_COMMANDS) {
          // A turn of the event loop before each read: with a store that reads synchronously
          // (SQLite) the whole next batch was otherwise built before the batch in flight saw its
          // WATCH's reply, so its MULTI went out only then, and Redis and this process took turns
          // instead of working at once (PostgreSQL's reads wait on I/O, which gave that turn).
          await new Promise<void>((resolve) => setImmediate(resolve));
          const events = await (next ?? read(last));
          next = null;
          if (events.length === 0) break;
          last = events[events.length - 1].position;
          if (last < head) next = read(last);
          builder.add(events);
          // Reactors are handed only the types they handle; their checkpoints still move to `last`.
          if (reacts.size > 0) for (const e of events) if (reacts.has(e.type)) reacted.push(e);
          count += events.length;
          if (last >= head) break;
        }
        if (count === 0) {
          await settle();
          return await this.markCaughtUp();
        }
        const batch = builder.finish();
        const expected = inflight?.leaves;
        await settle();
        // If the checkpoints are elsewhere now than the batch was built from, read again from there.
        if (expected && [...expected].some(([name, cp]) => this.state.get(name)?.checkpoint !== cp)) {
          next?.catch(() => undefined);
          next = null;
          from = this.minCheckpoint;
          continue;
        }
        inflight = { done: this.send(batch), events: reacted, last, leaves: batch.next };
        from = last;
      }
    } finally {
      // A read ahead that is not used must not surface as an unhandled rejection.
      next?.catch(() => undefined);
      await (inflight as { done: Promise<void> } | null)?.done.catch(() => undefined);
    }
  }

  private async commit(events: RecordedEvent[], live: boolean): Promise<void> {
    const owns = this.opts.owns;
    if (owns && this.opts.projections.length > 0 && !events.some(owns)) return this.advanceOnly(events);
    await this.send(this.prepare(events, live));
  }

  /**
   * A batch of other partitions' events: every projection and reactor checkpoint moves past it in
   * one script (switch-over.ts advanceCheckpoints), with nothing to apply or react to. Most live
   * batches of a partition's runner are such when each holds one request's events.
   */
  private async advanceOnly(events: RecordedEvent[]): Promise<void> {
    const { redis, ks, projections } = this.opts;
    const last = events[events.length - 1].position;
    if (last > this.processed) this.processed = last;
    const moved = projections.filter((p) => this.state.get(p.name)!.checkpoint < last);
    const reactors = [...this.reactorCheckpoints].filter(([, cp]) => cp < last).map(([name]) => name);
    if (moved.length + reactors.length === 0) return;
    const keys = [...moved.map((p) => ks.checkpoint(p.name, this.state.get(p.name)!.gen)), ...reactors.map((n) => ks.reactorCheckpoint(n))];
    // What every checkpoint will be once the script ran: the lowest is the progress announced.
    const after = (c: bigint) => (c > last ? c : last);
    const progress = [...[...this.state.values()].map((s) => after(s.checkpoint)), ...[...this.reactorCheckpoints.values()].map(after)].reduce((a, b) => (b < a ? b : a));
    await advanceCheckpoints(redis, ks, projections, this.state, this.opts.fence, last, keys, progress);
    for (const p of moved) this.state.get(p.name)!.checkpoint = last;
    for (const n of reactors) this.reactorCheckpoints.set(n, last);
    this.updateMin();
  }

  /**
   * Builds one batch's MULTI (every projection's changes and checkpoint), from the runner's
   * checkpoints or from `from` (those a batch still in flight will leave). Nothing is sent yet.
   */
  private prepare(events: RecordedEvent[], live: boolean, from?: Map<string, bigint>): PreparedBatch {
    const builder = this.startBatch(live, from);
    builder.add(events);
    return builder.finish();
  }

  /** A batch built from events given in one or more parts (add), then finished into its MULTI. */
  private startBatch(live: boolean, from?: Map<string, bigint>): { add(events: readonly RecordedEvent[]): void; queued(): number; finish(): PreparedBatch } {
    const { redis, ks, projections } = this.opts;
    let last = 0n;
    const lastOf = (events: readonly RecordedEvent[]) => {
      if (events.length > 0) last = events[events.length - 1].position;
    };
    if (projections.length === 0) return { add: lastOf, queued: () => 0, finish: () => ({ multi: null, next: new Map(), last, token: '' }) };
    const expected: Expected = projections.map((p) => {
      const st = this.state.get(p.name)!;
      return { name: p.name, gen: st.gen, checkpoint: from ? (from.get(p.name) ?? st.checkpoint) : st.checkpoint };
    });
    const multi = redis.pipeline();
    const token = guardBatch(multi, ks, expected, this.opts.fence);
    const parts = token === null ? [] : projections.map((p, i) => new ProjectionBatch(ks, p, expected[i], multi, live));
    return {
      add(events) {
        lastOf(events);
        // Projection by projection within each part: a projection's own commands keep event order
        // (different projections write different keys, so how their parts interleave changes nothing).
        for (const part of parts) part.add(events);
      },
      queued: () => multi.length,
      finish() {
        const next = new Map<string, bigint>();
        if (token === null) return { multi: null, next, last, token };
        projections.forEach((p, i) => next.set(p.name, parts[i].finish(multi)));
        return { multi, next, last, token };
      },
    };
  }

  /**
   * Commits a built batch in one round trip: its guard (switch-over.ts guardBatch) lets the MULTI
   * commit only if the fence and every pointer and checkpoint are what the batch was built from.
   */
  private async send(batch: PreparedBatch): Promise<void> {
    const { ks, fence } = this.opts;
    if (batch.token === null) throw new FencedOut('partition fenced: this runner holds no token');
    if (batch.last > this.processed) this.processed = batch.last;
    if (!batch.multi) {
      this.updateMin();
      return;
    }
    // Built under another token (the runner lost and took the partition again meanwhile): build it anew.
    if (fence && fence.token() !== batch.token) throw fence.token() === null ? new FencedOut('partition fenced: this runner holds no token') : new GenerationSwitched();
    // The progress announcement goes inside the MULTI: it is sent only if the batch commits, and
    // costs no round trip of its own (a throttled projector pays per round trip, not per command).
    batch.multi.publish(ks.progressChannel, this.progressAfter(batch.next).toString());
    batch.multi.exec(); // queues the EXEC; the next exec() sends the pipeline
    const replies = guardedOutcome((await batch.multi.exec()) as Array<[Error | null, unknown]> | null, batch.token);
    const failed = replies.find((r) => r instanceof Error);
    if (failed) this.opts.log.error({ err: failed }, 'a projection command failed inside a committed batch');
    for (const [name, cp] of batch.next) this.state.get(name)!.checkpoint = cp;
    this.updateMin();
  }

  /**
   * What minCheckpoint will be once a batch leaving the projections at `next` committed (the
   * reactors not moved yet): the lowest checkpoint; with nothing to checkpoint, whatever was read.
   */
  private progressAfter(next: ReadonlyMap<string, bigint>): bigint {
    let min: bigint | null = null;
    for (const [name, s] of this.state) {
      const c = next.get(name) ?? s.checkpoint;
      if (min === null || c < min) min = c;
    }
    for (const c of this.reactorCheckpoints.values()) if (min === null || c < min) min = c;
    return min ?? this.processed;
  }

  /** Runs the reactors over `events`, then moves their checkpoints to `through` (default: the last event). */
  private async react(events: RecordedEvent[], through?: bigint): Promise<void> {
    const { reactors = [], redis, ks } = this.opts;
    await runReactors(reactors, this.reactorCheckpoints, events, redis, ks, through);
    this.updateMin();
  }
}

const NOTHING_MOVED: ReadonlyMap<string, bigint> = new Map();

/** The event types some reactor handles. */
function reactedTypes(reactors: readonly Reactor[] = []): ReadonlySet<string> {
  const types = new Set<string>();
  for (const r of reactors) for (const t of r.handles) types.add(t);
  return types;
}

/**
 * The event types whose data the runner's projections and reactors read: the store may leave the
 * others' JSON unparsed (ReadAllOptions.decode), which is most of the traffic. Anything else that
 * looks into an event still gets the same value, parsed when read. A partition's runner (`owns`)
 * has every event left unparsed: most are other partitions', whose workspace it reads from the
 * JSON text (partitionOf), and its own are parsed when its projections first read them.
 */
export function typesRead(opts: Pick<RunnerOptions, 'projections' | 'reactors' | 'owns'>): ReadonlySet<string> {
  const types = new Set<string>();
  if (opts.owns) return types;
  for (const p of opts.projections) for (const t of p.handles) types.add(t);
  for (const r of opts.reactors ?? []) for (const t of r.handles) types.add(t);
  return types;
}
